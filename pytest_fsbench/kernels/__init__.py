"""The kernels a case runs under: the host's, a User-mode Linux guest or a virtual machine
(kernel.py: `Kernel`, parsed from --kernel), the guests themselves and the agent inside them
(guest.py, vm.py, guest_agent.py), and the probe that reads a kernel's facts (probe.py). A guest
builds targets and measures runs on the host's behalf, so this package may import measure/,
targets/, filesystems/, workloads/ and the ground; the verdicts and views above it never import
it (a run's kernel and emulation are in the stored run)."""

from .kernel import HOST, Kernel, parse_kernels

__all__ = ["HOST", "Kernel", "parse_kernels"]
