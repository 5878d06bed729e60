"""`fusion-switch check` as a subprocess: output formats, positions, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "data" / "samples"
SHARED_SAMPLES = REPO.parent / "shared" / "samples" / "fusion_cfg"
LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): "
    r"(?P<severity>error|warning|information|hint) (?P<code>[a-z0-9-]+): (?P<message>.+)$"
)

TYPO = (
    '{\n  "Switch": {\n    "GraphFusion": {\n      "ConvBatchnormFusionPas": "on"\n    }\n  }\n}\n'
)
UB = '{"Switch": {"UBFusion": {"TbeConvDequantSigmoidMulAddFusionPass": "off"}}}\n'


def check(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fusion_switch", "check", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def parsed(stdout: str) -> list[dict]:
    rows = []
    for line in stdout.splitlines():
        match = LINE.match(line)
        assert match, f"not file:line:col: severity code: message -> {line!r}"
        rows.append(match.groupdict())
    return rows


@pytest.mark.parametrize(
    ("name", "codes"),
    [
        ("precision_tool_fusion_off.cfg", ["all-overridden", "all-overridden"]),
        ("precision_tool_fusion_switch.cfg", []),
    ],
)
def test_bundled_samples(name: str, codes: list[str]) -> None:
    result = check(SAMPLES / name)
    assert result.returncode == 0, result.stderr
    assert [r["code"] for r in parsed(result.stdout)] == codes


def test_sample_copies_match_the_shared_originals() -> None:
    if not SHARED_SAMPLES.is_dir():
        pytest.skip(f"{SHARED_SAMPLES} not present (only in the team workspace)")
    for original in SHARED_SAMPLES.glob("*.cfg"):
        assert (SAMPLES / original.name).read_bytes() == original.read_bytes()


def test_text_format_positions_and_exit_codes(tmp_path: Path) -> None:
    typo = write(tmp_path, "fusion_switch.cfg", TYPO)
    result = check(typo)
    assert result.returncode == 0  # a warning is not an error
    [row] = parsed(result.stdout)
    assert (row["file"], row["line"], row["col"]) == (str(typo), "4", "7")
    assert (row["severity"], row["code"]) == ("warning", "unknown-rule")
    assert "ConvBatchnormFusionPass" in row["message"]

    broken = write(tmp_path, "broken.cfg", '{"Switch": {"GraphFusion": {"ALL": "off",}}}')
    both = check(typo, broken)
    assert both.returncode == 1
    rows = parsed(both.stdout)
    assert rows[0]["file"] == str(typo)  # files in the order given
    [comma] = [r for r in rows if r["file"] == str(broken) and r["code"] == "trailing-comma"]
    assert comma["severity"] == "error"
    assert comma["col"] == str(len('{"Switch": {"GraphFusion": {"ALL": "off"') + 1)


def test_json_format_uses_zero_based_utf16_ranges(tmp_path: Path) -> None:
    text = '{"Switch": {"GraphFusion": {"😀中Pass": "on"}}}'
    path = write(tmp_path, "fusion_switch.cfg", text)
    result = check("--format", "json", path)
    assert result.returncode == 0
    [entry] = json.loads(result.stdout)
    assert entry["file"] == str(path)
    [diag] = entry["diagnostics"]
    assert diag["code"] == "unknown-rule" and diag["severity"] == "warning"
    start = len('{"Switch": {"GraphFusion": {')
    end = start + len('"😀中Pass"') + 1  # the emoji is two UTF-16 code units
    assert diag["range"] == {
        "start": {"line": 0, "character": start},
        "end": {"line": 0, "character": end},
    }
    assert diag["message"] and isinstance(diag["data"], dict)


def test_target_option(tmp_path: Path) -> None:
    path = write(tmp_path, "fusion_switch.cfg", UB)
    assert parsed(check(path).stdout) == []
    rows = parsed(check("--target", "Atlas 350", path).stdout)
    assert [r["code"] for r in rows] == ["ub-unsupported-on-target"] * 2
    soc = parsed(check("--target", "Ascend950PR_9599", path).stdout)
    assert len(soc) == 2


def test_unknown_target_is_a_usage_error(tmp_path: Path) -> None:
    result = check("--target", "Atlas 9000", write(tmp_path, "fusion_switch.cfg", UB))
    assert result.returncode == 2
    assert "Atlas 9000" in result.stderr and "Atlas 350" in result.stderr


def test_extra_catalogue_option(tmp_path: Path) -> None:
    path = write(
        tmp_path, "fusion_switch.cfg", '{"Switch": {"GraphFusion": {"MyCustomFusionPass": "off"}}}'
    )
    extra = write(
        tmp_path,
        "extra.json",
        json.dumps({"rules": [{"name": "MyCustomFusionPass", "section": "GraphFusion"}]}),
    )
    broken = write(tmp_path, "broken.json", "{")
    assert [r["code"] for r in parsed(check(path).stdout)] == ["unknown-rule"]
    result = check("--catalogue", broken, "--catalogue", extra, path)
    assert result.returncode == 0
    assert parsed(result.stdout) == []
    assert str(broken) in result.stderr  # named, and the run goes on


def test_unreadable_files_exit_2_after_checking_the_rest(tmp_path: Path) -> None:
    good = write(tmp_path, "fusion_switch.cfg", TYPO)
    result = check(tmp_path / "missing.cfg", tmp_path, good)
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "missing.cfg" in result.stderr
    assert str(tmp_path) + ":" in result.stderr or "Is a directory" in result.stderr
    assert [r["code"] for r in parsed(result.stdout)] == ["unknown-rule"]
    as_json = check("--format", "json", tmp_path / "missing.cfg")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)[0]["error"].startswith("cannot read")


def test_invalid_utf8_is_reported_where_it_is(tmp_path: Path) -> None:
    data = b'{"Switch": {"GraphFusion": {"AB\xff": "on"}}}'
    result = check(write(tmp_path, "fusion_switch.cfg", data))
    assert result.returncode == 1
    rows = {r["code"]: r for r in parsed(result.stdout)}
    bad = rows["json-syntax"]
    assert (bad["line"], bad["col"]) == ("1", str(len('{"Switch": {"GraphFusion": {"AB') + 1))
    assert "UTF-8" in bad["message"]


def test_bom_and_binary_garbage(tmp_path: Path) -> None:
    bom = write(tmp_path, "bom.cfg", b"\xef\xbb\xbf" + TYPO.encode())
    [row] = parsed(check(bom).stdout)
    assert (row["line"], row["col"], row["code"]) == ("4", "7", "unknown-rule")
    garbage = write(tmp_path, "garbage.cfg", bytes(range(256)) * 20)
    result = check(garbage)
    assert result.returncode == 1 and result.stdout
    parsed(result.stdout)  # every line still has the documented shape


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_reader_that_leaves_early_gets_no_traceback(fmt: str) -> None:
    """`fusion-switch check FILES | head -1`: a review saw BrokenPipeError's traceback."""
    files = sorted(str(p) for p in (REPO / "tests" / "data" / "real" / "cfg").iterdir())
    process = subprocess.Popen(
        [sys.executable, "-m", "fusion_switch", "check", "--format", fmt, *files * 20],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout.readline()
    process.stdout.close()  # the reader leaves, as head does
    _, stderr = process.communicate(timeout=120)
    assert b"Traceback" not in stderr and b"BrokenPipe" not in stderr, stderr.decode()[-800:]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_file_is_said_to_be_utf16(tmp_path: Path, encoding: str) -> None:
    """A review: a UTF-16 file was read as the old line format and the message quoted
    'Invalid switch value "\\x00{\\x00"...' instead of saying what the file is."""
    cfg = tmp_path / "fusion_switch.cfg"
    text = '{"Switch": {"GraphFusion": {"ALL": "off"}}}'
    data = text.encode(encoding)
    cfg.write_bytes(data if data[:2] in (b"\xff\xfe", b"\xfe\xff") else b"\xfe\xff" + data)
    done = subprocess.run(
        [sys.executable, "-m", "fusion_switch", "check", str(cfg)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "UTF-16" in done.stdout and "save" in done.stdout.lower(), done.stdout
    assert "\\x00" not in done.stdout, done.stdout
