"""What a stored case's manifest says of how its numbers were made, read from the store by every
view and verdict (no view asks a guest module): whether a virtual machine emulated the CPU
(TCG) or ran under KVM, whether two sets of cases may be compared, and the kernel a case ran
under."""

from __future__ import annotations

from ..errors import UsageError


def emulation(manifest: dict[str, object]) -> str | None:
    """How a case's numbers were made, from its manifest: 'emulated' (a virtual machine under
    TCG), 'kvm' (one under KVM), or None (the host's kernel, a UML guest)."""
    kernel = manifest.get("kernel")
    if not isinstance(kernel, dict) or kernel.get("runs_under") != "vm":
        return None
    return "emulated" if kernel.get("accelerator") == "tcg" else "kvm"


def emulations(manifests: dict[str, dict[str, object]]) -> dict[str, str | None]:
    """Each case id's emulation, from the cases' manifests."""
    return {case: emulation(manifest) for case, manifest in manifests.items()}


def mixed_emulation(base: dict[str, str | None], new: dict[str, str | None]) -> list[str]:
    """The cases (by id) measured emulated on one side and not on the other: numbers that must not
    be compared (an emulated CPU is many times slower than the host's, and not uniformly so)."""
    return [f"{case} ({base[case] or 'native'} against {new[case] or 'native'})"
            for case in sorted(base.keys() & new.keys()) if (base[case] == "emulated") != (new[case] == "emulated")]


def check_emulation(base: dict[str, str | None], new: dict[str, str | None], given: str) -> None:
    """A UsageError when a comparison would mix emulated numbers with others."""
    mixed = mixed_emulation(base, new)
    if mixed:
        raise UsageError(f"{given}: {', '.join(mixed)}: numbers measured under QEMU's CPU emulation (TCG) are "
                         "compared only with each other, never with a host's or a KVM guest's; compare like with like")


def kernel_of(session: dict, case: dict) -> str:
    """The kernel a case ran under: a guest's (in its case manifest), else the session's."""
    guest = case.get("kernel")
    if isinstance(guest, dict):
        return f"{guest.get('label', '?')} {guest.get('release', '?')}"
    return str(session.get("kernel", "unknown"))
