"""The API layer: the published descriptor snapshot (:mod:`.descriptors`), the kind registry,
the resource record and proto3 JSON rules. The generated models are :mod:`cesync.models`."""
