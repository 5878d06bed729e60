"""Which version `restore` brings back, said the same way by the command line and the editor,
and the versions listed for a client to choose from (VS Code's quick pick). Pure."""

from __future__ import annotations

from .history import Version, default_version, made_from_all_off


def label(version: Version) -> str:
    """What a version's change was, as people call it."""
    return "all off" if version.kind == "all-off" else version.why


def default_note(versions: list[Version], version: Version) -> str:
    """Why `version` is restore's default, when it is not simply the last change: the last
    change switched the suspects off in the configuration from before 'all off', so the
    default is that configuration, the user's own (empty otherwise)."""
    later = [v for v in versions if v.number > version.number and v.kind != "restore"]
    applied = later[-1] if later else None
    base = made_from_all_off(versions, applied) if applied is not None else None
    if applied is None or base is None or base.number != version.number:
        return ""
    return (
        f"your own configuration (change {applied.number}, '{label(applied)}', was made in it "
        f"in place of the all-off file; restore version {applied.number} to get the all-off "
        "file back)"
    )


def choices(versions: list[Version]) -> dict:
    """`{"versions": [...], "default": N}`, newest first: each version's number, what its
    change was (`label`), who made it and when, and whether restore brings it back by
    default. Restoring version N brings back the file as it was before change N."""
    default = default_version(versions)
    return {
        "versions": [
            {
                "version": v.number,
                "label": v.why or label(v),
                "kind": v.kind,
                "who": v.who,
                "when": v.when,
                "absent": v.absent,
                "size": v.size,
                "default": default is not None and v.number == default.number,
            }
            for v in reversed(versions)
        ],
        "default": default.number if default is not None else None,
    }
