"""The pure core: data in, data out, no I/O (parsing, lint, normalize, diff, plan, order)."""
