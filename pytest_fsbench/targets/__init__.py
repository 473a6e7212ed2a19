"""Where a target is built: one filesystem on its devices, built, mounted and torn down
(target.py), the devices it is built on (devices.py: loop images or the user's own, after the
checks of safety.py), the mounts it leaves (mounts.py), the undo stack that tears down whatever
was built (undo.py), the checks made before anything is built (preflight.py) and the sweep of a
killed session's leftovers (cleanup.py). It may import filesystems/, workloads/ (a workload's
needs of its target) and the ground."""
