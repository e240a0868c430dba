"""Moving resources between the app, the repo and archives: reading an app, export, import, snapshots."""
