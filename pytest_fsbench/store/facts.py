"""What a stored case's manifest says of how its numbers were made, read from the store by every
view and verdict (no view asks a guest module): whether a virtual machine emulated the CPU
(TCG) or ran under KVM, whether two sets of cases may be compared, the kernel a case ran
under, and what a session ran (its cases and options, the study and scale it was run for)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UsageError

#: the environment variable naming the study and scale a session runs for (`fsbench study` sets it,
#: studies/launch.py); the session records it as its request's "study" (study_marker), so a later
#: plan of that study finds the earlier sessions' times
STUDY = "FSBENCH_STUDY"


#: the environment variable naming the bisect and step a session measures (`fsbench bisect` sets it,
#: bisect/run.py); the session records it as its request's "bisect", so the bisect finds the session
BISECT = "FSBENCH_BISECT"


def study_marker(name: str, scale: str) -> str:
    """What a study's session records as its "study": btrfs-options --scale=quick."""
    return f"{name} --scale={scale}"


def runner(manifest: dict) -> str:
    """Who runs a session, from its row's manifest: 'pid N on HOST' of the process that resumed it
    last (and since when), else of the one that started it."""
    resumer = manifest.get("resumed_by")
    who = resumer if isinstance(resumer, dict) else manifest
    pid = str(who.get("process", "")).split(" ")[0] or "?"
    since = f", resuming it since {who['at']}" if isinstance(resumer, dict) and who.get("at") else ""
    return f"pid {pid} on {who.get('hostname', '?')}{since}"


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


#: pytest's options that take the next word as their value (so it is no test path)
PYTEST_VALUES = frozenset(("-k", "-m", "-p", "-o", "-c", "-W", "-r", "--tb", "--deselect", "--ignore", "--ignore-glob",
                           "--rootdir", "--basetemp", "--junitxml", "--junit-xml", "--maxfail", "--durations",
                           "--confcutdir", "--log-level", "--log-file", "--override-ini", "--capture"))


def selection(argv, valued=frozenset()) -> dict[str, object]:
    """The tests a command line selects: its test paths (files, directories, node ids) and its -k
    and -m expressions. valued: the plugin's options that take the next word as their value."""
    found: dict[str, object] = {"files": []}
    words = list(argv)
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        for flag in ("-k", "-m"):
            if word == flag and i + 1 < len(words):
                found[flag] = words[i + 1]
            elif word.startswith(flag) and len(word) > 2 and not word.startswith("--"):
                found[flag] = word[2:].lstrip("=")
        if not word.startswith("-") and before not in PYTEST_VALUES and before not in valued:
            found["files"].append(word)  # type: ignore[union-attr]
    return found


def ran(args: dict, manifest: dict, specs: list[dict], tests: int = 0) -> dict[str, object]:
    """What a session ran: as it recorded it when it started (args["ran"]), else (a session
    recorded before it did) read from the cases it measured and its command line; with its host's
    kernel and how many tests it recorded."""
    asked = args.get("ran")
    if not isinstance(asked, dict):
        options = sorted({f"{spec['fs']}:{key}={value}" for spec in specs
                          for key, value in (spec.get("options") or {}).items()})
        asked = {"filesystems": sorted({spec["fs"] for spec in specs}),
                 "layouts": sorted({spec["layout"] for spec in specs}), "options": options, "paired": [],
                 "kernels": sorted({spec.get("kernel", "host") for spec in specs}),
                 "selection": selection(args.get("argv", []))}
    return {**asked, "kernel": manifest.get("kernel", ""), "tests": tests,
            "measured": sorted({spec["id"] for spec in specs if "id" in spec})}


def ran_text(found: dict[str, object]) -> str:
    """One line of what a session ran, e.g. "ext4,btrfs x single; options btrfs:compress=zstd;
    tests benchmarks/test_dd.py -k write; kernel host (6.1.0-13-amd64), 4 tests"."""
    chosen = found.get("selection") or {}
    tests = " ".join([*chosen.get("files", []), *(f"{flag} {chosen[flag]!r}" if " " in str(chosen[flag])
                                                   else f"{flag} {chosen[flag]}"
                                                   for flag in ("-k", "-m") if flag in chosen)])
    parts = [f"{','.join(found.get('filesystems', [])) or '-'} x {','.join(found.get('layouts', [])) or '-'}"]
    if found.get("options"):
        parts.append(f"options {' '.join(found['options'])}")
    if found.get("paired"):
        parts.append(f"paired {' '.join(found['paired'])}")
    parts.append(f"tests {tests or '(the configured test paths)'}")
    kernels = "+".join(found.get("kernels", [])) or "host"
    parts.append(f"kernel {kernels}" + (f" ({found['kernel']})" if found.get("kernel") else "")
                 + f", {found.get('tests', 0)} test{'s' * (found.get('tests', 0) != 1)} recorded")
    return "; ".join(parts)


#: options that change only where results go or how pytest reports: a resumed session (or an earlier session whose
#: times a study's plan takes) may differ in them
NOT_CASES = ("--resume", "--report", "--store", "--junitxml", "--junit-xml", "-q", "-v", "-x", "-rs", "-p",
             "--tb", "-s")


def case_options(argv: Sequence[str]) -> list[str]:
    """The command line's words that choose the cases and how they run, sorted: without
    NOT_CASES (and the value after -p or a bare --resume)."""
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        flag = word.split("=", 1)[0]
        if flag in NOT_CASES:
            skip = word in ("-p", "--resume", "--tb")
            continue
        kept.append(word)
    return sorted(kept)
