"""catalogue.cann: the rules of the user's CANN install (its fusion_config.json) become known,
with their source in hover; the server says which catalogue is in force."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fusion_switch.catalogue import builtin_catalogue
from fusion_switch.catalogue import cann as cann_module
from fusion_switch.catalogue.cann import cann_catalogue, find_cann_configs
from fusion_switch.cfg import analyse, hover
from fusion_switch.cfg.model import Context
from fusion_switch.lsp.settings import Settings
from fusion_switch.lsp.state import ServerState

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
STUB = REAL / "cann_config" / "CANN_910b_stub-fusion_config.json"
CANN_ONLY = "MoeDistributeDispatchV2FusionPass"  # in the stub's Switch, not in the built-in list


@pytest.fixture(autouse=True)
def no_real_install(monkeypatch, tmp_path):
    """Tests never see a CANN installed on the machine that runs them."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cann_module, "USUAL_ROOTS", (str(tmp_path / "none"),))


def install(root: Path, below: str = "opp/built-in/fusion_pass/config", version="8.1.RC1"):
    folder = root / below
    folder.mkdir(parents=True)
    shutil.copyfile(STUB, folder / "fusion_config.json")
    if version:
        (root / "version.cfg").write_text(f"Version={version}\n")
    return folder / "fusion_config.json"


def expected_new_rules() -> set[tuple[str, str]]:
    """Every (section, rule) the stub's Switch, Priority and O1 list name that the built-in
    catalogue lacks in that section (counted here from the file itself)."""
    data = json.loads(STUB.read_text())
    names = {(s, n) for s in ("GraphFusion", "UBFusion") for n in data["Switch"][s] if n != "ALL"}
    for section, stages in data["Priority"].items():
        names |= {(section, n) for stage in stages.values() for n in stage}
    listed = {n for _, n in names}
    names |= {("GraphFusion", n) for n in data["ExceptionalPassOfO1Level"] if n not in listed}
    cat = builtin_catalogue()
    return {(s, n) for s, n in names if cat.get(n, s) is None}


def test_home_path_install_adds_the_rules_the_builtin_catalogue_lacks(tmp_path):
    config = install(tmp_path / "cann")
    result = cann_catalogue(environ={"ASCEND_HOME_PATH": str(tmp_path / "cann")})
    assert result.files == [config] and result.version == "8.1.RC1"
    assert result.found_by == f"ASCEND_HOME_PATH = {tmp_path / 'cann'}"
    added = {(s, n) for s in ("GraphFusion", "UBFusion") for n in result.added.rules[s]}
    assert added == expected_new_rules()
    assert ("GraphFusion", CANN_ONLY) in added
    rule = result.added.get(CANN_ONLY)
    assert rule.default == "off" and rule.source == str(config)
    assert "CANN 8.1.RC1" in rule.origin and str(config) in rule.origin
    assert builtin_catalogue().get("AABiasaddConvFusion") is not None
    assert result.added.get("AABiasaddConvFusion") is None  # known rules keep built-in facts


def test_opp_path_and_usual_location_and_setting(tmp_path, monkeypatch):
    install(tmp_path / "opp_root", below="built-in/fusion_pass/config", version=None)
    files, how = find_cann_configs(environ={"ASCEND_OPP_PATH": str(tmp_path / "opp_root")})
    assert len(files) == 1 and how.startswith("ASCEND_OPP_PATH")
    usual = tmp_path / "Ascend"
    install(usual / "ascend-toolkit" / "latest")
    monkeypatch.setattr(cann_module, "USUAL_ROOTS", (str(usual),))
    files, how = find_cann_configs(environ={})
    assert len(files) == 1 and how == f"usual location {usual}"
    setting = tmp_path / "mine"
    install(setting)
    files, how = find_cann_configs(str(setting), environ={})
    assert files[0].is_relative_to(setting) and how.startswith("fusionSwitch.catalogue")


def test_no_install_found_says_so(tmp_path):
    result = cann_catalogue(environ={})
    assert result.files == [] and len(result.added) == 0
    assert result.label == "no CANN install found"
    wrong = cann_catalogue(str(tmp_path), environ={})
    assert wrong.errors and "no fusion_config.json found" in str(wrong.errors[0])


def test_server_uses_the_cann_rules_and_hover_shows_their_source(tmp_path, monkeypatch):
    config = install(tmp_path / "cann")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "cann"))
    state = ServerState()
    text = json.dumps({"Switch": {"GraphFusion": {CANN_ONLY: "off"}}}, indent=2)
    ctx = state.context()
    codes = [f.code for f in analyse(text, ctx).findings]
    assert "unknown-rule" not in codes
    info = hover(analyse(text, ctx).document, text.index(CANN_ONLY) + 2, ctx)
    assert info is not None and str(config) in info.markdown and "CANN 8.1.RC1" in info.markdown
    assert "CANN 8.1.RC1" in state.describe() and "23 rules" in state.describe()
    builtin_only = analyse(text, Context(catalogue=builtin_catalogue()))
    assert "unknown-rule" in [f.code for f in builtin_only.findings]  # fails without CANN


def test_a_folder_in_extra_files_is_the_cann_install_to_read(tmp_path):
    install(tmp_path / "toolkit")
    state = ServerState()
    assert state.catalogue.get(CANN_ONLY) is None
    state.apply_settings(Settings(extra_files=(str(tmp_path / "toolkit"),)))
    assert state.catalogue.get(CANN_ONLY) is not None
    assert "fusionSwitch.catalogue" in state.describe()


def test_check_knows_the_rules_of_the_cann_install(tmp_path):
    """`fusion-switch check` (a subprocess) reads the same CANN install as the editor."""
    import os
    import subprocess
    import sys

    install(tmp_path / "cann")
    cfg = tmp_path / "fusion_switch.cfg"
    cfg.write_text(json.dumps({"Switch": {"GraphFusion": {CANN_ONLY: "off"}}}, indent=2))

    def check(*extra: str, env: dict | None = None) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "fusion_switch", "check", "--format", "json", *extra, str(cfg)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert result.returncode in (0, 1), result.stderr
        return result.stdout

    env = {**os.environ, "ASCEND_HOME_PATH": str(tmp_path / "cann")}
    assert "unknown-rule" not in check(env=env)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    assert "unknown-rule" not in check("--catalogue", str(tmp_path / "cann"), env=clean)


def test_an_install_folder_the_user_cannot_search_is_passed_over(tmp_path):
    """A review: CANN installed under a 750 folder (its own user's) made every command raise
    PermissionError out of ``is_dir``, `doctor` included. Run as an unprivileged user (a
    forked child gives up root first)."""
    import os

    from fusion_switch.workflow import doctor

    root = tmp_path / "Ascend"
    install(root / "ascend-toolkit" / "latest")
    root.chmod(0o700)
    env = {"ASCEND_HOME_PATH": str(root / "ascend-toolkit" / "latest")}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what happened through the pipe, then leave at once
        os.close(read)
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            else:
                root.chmod(0o000)
            files, how = find_cann_configs(environ=env)
            cann = cann_catalogue(str(root), environ=env)
            os.environ.update(env)
            told = doctor.cann_check(doctor.cann_home())
            said = json.dumps(
                [[str(f) for f in files], how, [e.message for e in cann.errors], told.detail]
            )
        except BaseException as error:  # the parent says what it was
            said = json.dumps(f"raised {type(error).__name__}: {error}")
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = json.loads(pipe.read())
    os.waitpid(pid, 0)
    root.chmod(0o700)
    assert isinstance(said, list), said
    files, how, errors, doctor_says = said
    assert files == [] and how == ""
    assert errors and "cannot be read" in errors[0] and "extraFiles" in errors[0], errors
    assert "cannot read it" in doctor_says, doctor_says
