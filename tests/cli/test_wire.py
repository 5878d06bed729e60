"""`fusion-switch wire`: each framework's option name, held against the public source it was
checked in (the table below is written from those sources, independently of wiring.py), the
absolute path in the snippet, and `--check` on scripts that pass it, pass it wrongly, or not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import fs, user_cfg

# framework: (exact option text the snippet must contain, the source it was checked in)
CHECKED = {
    # hicann/tensorflow tf_adapter/util/npu_attrs.cc reads params "fusion_switch_file" of the
    # NpuOptimizer (parameter_map) into ge.fusionSwitchFile; NPURunConfig sets the same key
    "tf1": (
        'parameter_map["fusion_switch_file"]',
        "hicann/tensorflow tf_adapter/util/npu_attrs.cc",
    ),
    # hicann/tensorflow tf_adapter_2.x/npu_device/core/npu_wrapper.cpp: kGlobalConfigOptions
    # {"fusion_switch_file", ge::FUSION_SWITCH_FILE}
    "tf2": (
        "global_options().fusion_switch_file",
        "hicann/tensorflow tf_adapter_2.x/npu_device/core/npu_wrapper.cpp",
    ),
    # Ascend/torchair python/torchair/configs/fusion_config.py: fusion_switch_file ->
    # 'ge.fusionSwitchFile'; compiler_config.py: self.fusion_config
    "torchair": ("config.fusion_config.fusion_switch_file", "torchair/configs/fusion_config.py"),
    # mindspore/python/mindspore/context.py: ascend_config ge_options, levels 'global' /
    # 'session'; common/api.py: jit(backend="GE", ge_options=...)
    "mindspore": ('{"ge_options": {"global": {"ge.fusionSwitchFile"', "mindspore/context.py"),
    # hicann/ge docs/zh/user_guides/atc_tools/CLI_options/--fusion_switch_file.md
    "atc": ("--fusion_switch_file=", "hicann/ge docs/zh/user_guides/atc_tools/CLI_options"),
    # hiascend AOE command-line reference, --fusion_switch_file (aoerc_16_0050)
    "aoe": ("--fusion_switch_file=", "aoerc_16_0050"),
    # Ascend/msit msquickcmp/__main__.py: parser.add_argument('--fusion-switch-file', ...)
    "msit": ("--fusion-switch-file", "Ascend/msit"),
    # hicann/ge inc/graph_metadef/external/ge_common/ge_common_api_types.h:
    # FUSION_SWITCH_FILE = "ge.fusionSwitchFile" (the graphengine header it replaced moved)
    "ge": (
        '"ge.fusionSwitchFile"',
        "hicann/ge inc/graph_metadef/external/ge_common/ge_common_api_types.h",
    ),
    # same header: ir_option::FUSION_SWITCH_FILE is in global_options (aclgrphBuildInitialize)
    "acl": (
        "ge::ir_option::FUSION_SWITCH_FILE",
        "hicann/ge inc/graph_metadef/external/ge_common/ge_common_api_types.h",
    ),
    # mindspore-ai/docs docs/lite/docs/source_en/mindir/converter_tool_ascend.md (moved from
    # use/cloud_infer/): [ascend_context] fusion_switch_config_file_path, converter_lite with
    # --configFile and --optimize=ascend_oriented
    "mslite": (
        "fusion_switch_config_file_path=",
        "docs/lite/docs/source_en/mindir/converter_tool_ascend.md",
    ),
}


def test_the_converter_command_reads_the_config_file(tmp_path):
    """A review: the MindSpore Lite snippet omitted the converter command that reads it."""
    printed = fs("wire", "mslite", user_cfg(tmp_path)).stdout
    assert "converter_lite" in printed and "--configFile=" in printed
    assert "--optimize=ascend_oriented" in printed


@pytest.mark.parametrize("framework", sorted(CHECKED))
def test_snippet_uses_the_checked_option_and_cites_its_source(tmp_path, framework):
    cfg = user_cfg(tmp_path)
    option, source = CHECKED[framework]
    done = fs("wire", framework, cfg)
    assert done.returncode == 0, done.stderr
    assert option in done.stdout
    assert str(cfg.resolve()) in done.stdout  # the absolute path
    [cited] = [line for line in done.stdout.splitlines() if line.startswith("# source:")]
    assert source in cited


def test_acl_says_not_aclgrphbuildmodel_and_torch_npu_points_to_torchair(tmp_path):
    cfg = user_cfg(tmp_path)
    acl = fs("wire", "acl", cfg).stdout
    assert "aclgrphBuildInitialize" in acl and "not aclgrphBuildModel" in acl
    eager = fs("wire", "torch_npu", cfg).stdout
    assert "no fusion switch file option" in eager and "wire torchair" in eager


@pytest.mark.parametrize(
    ("framework", "script", "expected"),
    [
        ("tf1", 'custom_op.parameter_map["fusion_switch_file"].s = b"{cfg}"\n', 0),
        ("tf1", "NPURunConfig(model_dir=d, fusion_switch_file='{cfg}')\n", 0),
        ("tf1", '# custom_op.parameter_map["fusion_switch_file"].s = b"{cfg}"\n', 1),
        ("tf1", 'custom_op.parameter_map["fusion_switch_file"].s = b"/other/x.cfg"\n', 1),
        ("torchair", 'config.fusion_config.fusion_switch_file = "{cfg}"\n', 0),
        ("torchair", 'config.fusion_switch_file = "{cfg}"\n', 1),  # wrong attribute
        (
            "mindspore",
            'ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O2"}, ascend_config={'
            '"ge_options": {"global": {"ge.fusionSwitchFile": "{cfg}"}}})\n',
            0,
        ),
        ("mindspore", 'ms.set_context(fusion_switch_file="{cfg}")\n', 1),
        ("atc", "atc --model=m.onnx --fusion_switch_file={cfg} --soc_version=Ascend910B1\n", 0),
        ("mslite", "[ascend_context]\nfusion_switch_config_file_path={cfg}\n", 0),
        ("torch_npu", "import torch_npu\n", 1),
        # a review: a file of the same name elsewhere passed as this configuration
        ("torchair", 'config.fusion_config.fusion_switch_file = "/data/old/{name}"\n', 1),
        # relative: recognised, with a warning (test_a_relative_path_is_recognised_with_a_warning)
        ("torchair", 'config.fusion_config.fusion_switch_file = "{name}"\n', 0),
        ("torchair", "config.fusion_config.fusion_switch_file = './{name}'\n", 0),
        ("atc", "atc --model=m.onnx --fusion_switch_file=/old/{name} --soc_version=X\n", 1),
        # a variable before the name is not followed: it may be this file (a review)
        ("atc", "atc --model=m.onnx --fusion_switch_file=${SCRIPT_DIR}/{name}\n", 0),
        ("atc", 'atc --model=m.onnx --fusion_switch_file="$(pwd)/{name}"\n', 0),
        ("atc", "atc --model=m.onnx --fusion_switch_file=$PWD/{name}\n", 0),
    ],
)
def test_check_a_script(tmp_path, framework, script, expected):
    cfg = user_cfg(tmp_path)
    path = tmp_path / "train.py"
    path.write_text(script.replace("{cfg}", str(cfg)).replace("{name}", cfg.name))
    done = fs("wire", framework, cfg, "--check", path)
    assert done.returncode == expected, done.stdout + done.stderr
    if expected == 1 and framework != "torch_npu":
        assert str(cfg.resolve()) in done.stdout  # shows what to add


def test_unknown_framework_is_bad_input(tmp_path):
    done = fs("wire", "caffe", user_cfg(tmp_path))
    assert done.returncode == 2 and "tf1" in done.stderr and "Traceback" not in done.stderr


def test_a_tilde_path_is_not_this_configuration_and_says_why(tmp_path):
    """A review: "~/fusion_switch.cfg" counted as this configuration, but nothing expands it: not
    a Python string, not bash after `--option=`; the framework looks for a folder named "~"."""
    cfg = user_cfg(tmp_path)
    python = tmp_path / "t.py"
    python.write_text(
        f'custom_op.parameter_map["fusion_switch_file"].s = tf.compat.as_bytes("~/{cfg.name}")\n'
    )
    shell = tmp_path / "r.sh"
    shell.write_text(f"atc --model=m.onnx --fusion_switch_file=~/{cfg.name}\n")
    for framework, script in (("tf1", python), ("atc", shell)):
        done = fs("wire", framework, cfg, "--check", script, env={"HOME": str(tmp_path)})
        assert done.returncode == 1, done.stdout + done.stderr
        assert "'~' is not expanded" in done.stdout


def test_the_cfg_argument_expands_a_tilde(tmp_path):
    """A review: `wire` made "~/x.cfg" (quoted, so the shell left it) <cwd>/~/x.cfg."""
    cfg = user_cfg(tmp_path)
    done = fs("wire", "torchair", f"~/{cfg.name}", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert str(cfg) in done.stdout and "~" not in done.stdout
    assert "does not exist" not in done.stderr


RELATIVE = "relative to the job's working directory; use an absolute path"


@pytest.mark.parametrize(
    "value",
    ['"{name}"', "'./{name}'", '"$(pwd)/{name}"', "$PWD/{name}"],
)
def test_a_relative_path_is_recognised_with_a_warning(tmp_path, value):
    """A review: a relative path resolves against the job's working directory, which is not the
    cfg's folder in a job that runs each rank in its own folder (`cd device0`)."""
    cfg = user_cfg(tmp_path)
    script = tmp_path / "train.py"
    text = value.replace("{name}", cfg.name)
    if value.startswith(('"$', "$")):
        script.write_text(f"atc --model=m.onnx --fusion_switch_file={text}\n")
        framework = "atc"
    else:
        script.write_text(f"config.fusion_config.fusion_switch_file = {text}\n")
        framework = "torchair"
    done = fs("wire", framework, cfg, "--check", script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{script}:1: warning: {RELATIVE}" in done.stdout
    absolute = tmp_path / "abs.py"
    absolute.write_text(f'config.fusion_config.fusion_switch_file = "{cfg}"\n')
    assert "warning" not in fs("wire", "torchair", cfg, "--check", absolute).stdout


# A review: each framework's marker was tried loosely, so lines that wire nothing counted.
NOT_WIRING = {
    # an argument to the user's own script (only a command line starting with atc/aoe wires)
    "forwarded": ("python train.py --fusion_switch_file={cfg}\n", ("tf1", "tf2", "atc", "aoe")),
    # MindSpore has no such context key; not NPURunConfig's keyword either
    "set_context": (
        'ms.set_context(mode=ms.GRAPH_MODE, fusion_switch_file="{cfg}")\n',
        ("tf1", "tf2", "mindspore"),
    ),
    # GE reads no environment variable of that name
    "environment": ("export FUSION_SWITCH_FILE={cfg}\npython train.py\n", ("ge", "acl", "atc")),
    # TorchAir's option is neither TF1's nor TF2's
    "torchair": ('config.fusion_config.fusion_switch_file = "{cfg}"\n', ("tf1", "tf2")),
}


@pytest.mark.parametrize(
    ("case", "framework"),
    [(case, fw) for case, (_, frameworks) in NOT_WIRING.items() for fw in frameworks],
)
def test_a_line_that_wires_nothing_is_not_wiring(tmp_path, case, framework):
    cfg = user_cfg(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text(NOT_WIRING[case][0].replace("{cfg}", str(cfg)))
    done = fs("wire", framework, cfg, "--check", script)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(this configuration)" not in done.stdout


def test_an_argument_to_the_users_script_is_reported_as_forwarded(tmp_path):
    cfg = user_cfg(tmp_path)
    script = tmp_path / "run.sh"
    script.write_text(f"cd job && python train.py --fusion_switch_file={cfg} --epochs 3\n")
    done = fs("wire", "atc", cfg, "--check", script)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{script}:1: passed to your script (python train.py)" in done.stdout
    assert "check that it forwards it" in done.stdout


@pytest.mark.parametrize(
    ("framework", "script"),
    [
        ("tf1", "config = NPURunConfig(\n    model_dir=d,\n    fusion_switch_file='{cfg}',\n)\n"),
        ("tf2", "opts = npu.global_options()\nopts.fusion_switch_file = '{cfg}'\nnpu.open()\n"),
        ("atc", "atc --model=m.onnx \\\n    --fusion_switch_file={cfg} --soc_version=X\n"),
        ("atc", 'ASCEND_X=1 /usr/local/bin/atc --fusion_switch_file="{cfg}" --model=m\n'),
        ("atc", 'subprocess.run(["atc", "--model=m.onnx", "--fusion_switch_file={cfg}"])\n'),
        ("aoe", 'os.system("aoe --job_type=2 --fusion_switch_file={cfg}")\n'),
        ("ge", 'std::map<AscendString, AscendString> o = {{"ge.fusionSwitchFile", "{cfg}"}};\n'),
        ("ge", 'options[ge::FUSION_SWITCH_FILE] = "{cfg}";\n'),
        ("acl", 'global_options = {{ge::ir_option::FUSION_SWITCH_FILE, "{cfg}"}};\n'),
    ],
)
def test_each_real_api_is_recognised(tmp_path, framework, script):
    cfg = user_cfg(tmp_path)
    path = tmp_path / "job"
    path.write_text(script.replace("{cfg}", str(cfg)))
    done = fs("wire", framework, cfg, "--check", path)
    assert "(this configuration)" in done.stdout, done.stdout + done.stderr


TRIAL_JOB = """import json, os, sys
path = {value}
switch = json.load(open(path))["Switch"]["GraphFusion"]
sys.exit(1 if switch.get("R2", "off" if switch.get("ALL") == "off" else "on") == "on" else 0)
"""


def test_a_job_wired_as_printed_reads_each_bisect_trials_copy(tmp_path):
    """A review: `bisect -j N` gives each trial its own copy of the cfg, as {cfg} and in
    FUSION_SWITCH_CFG, but the printed wiring hard-coded the cfg's path: a job wired as told
    read the same file in every trial, and the bisection could not find the guilty rule."""
    cfg = tmp_path / "fusion_switch.cfg"
    rules = {f"R{i}": "on" for i in range(6)}
    cfg.write_text(json.dumps({"Switch": {"GraphFusion": rules, "UBFusion": {}}}))
    [line] = [x for x in fs("wire", "tf2", cfg).stdout.splitlines() if "fusion_switch_file =" in x]
    value = line.split("=", 1)[1].split("  #", 1)[0].strip()
    job = tmp_path / "job.py"
    job.write_text(TRIAL_JOB.format(value=value))
    done = fs(
        "bisect", cfg, "--rules=" + ",".join(f"GraphFusion:{r}" for r in rules), "-j", "2",
        "--format", "json", "--", sys.executable, job, "{cfg}",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert [g["rule"] for g in json.loads(done.stdout.splitlines()[-1])["guilty"]] == ["R2"]


def printed_script(framework: str, cfg: Path) -> str:
    """What `wire FRAMEWORK CFG` prints, without its header (title, option, source, note)."""
    lines = fs("wire", framework, cfg).stdout.splitlines()[1:]
    header = ("# option:", "# source:", "# note:", "# bisect:")
    return "\n".join(x for x in lines if not x.startswith(header))


@pytest.mark.parametrize(
    "framework", ["tf1", "tf2", "torchair", "mindspore", "atc", "aoe", "ge", "acl"]
)
def test_the_printed_wiring_reads_the_trial_variable_and_passes_check(tmp_path, framework):
    cfg = user_cfg(tmp_path)
    text = printed_script(framework, cfg)
    if framework in ("atc", "aoe"):
        assert f'"${{FUSION_SWITCH_CFG:-{cfg}}}"' in text
        value = text.split("--fusion_switch_file=", 1)[1].split()[0]
        for env, expected in (({"FUSION_SWITCH_CFG": "/trial/copy.cfg"}, "/trial/copy.cfg"),
                              ({}, str(cfg))):  # fmt: skip
            environ = {k: v for k, v in os.environ.items() if k != "FUSION_SWITCH_CFG"}
            shell = subprocess.run(
                ["sh", "-c", f"printf %s {value}"], capture_output=True, text=True,
                env={**environ, **env},
            )  # fmt: skip
            assert shell.stdout == expected
    elif framework in ("ge", "acl"):
        assert 'std::getenv("FUSION_SWITCH_CFG")' in text and f'"{cfg}"' in text
    else:
        assert f'os.environ.get("FUSION_SWITCH_CFG", "{cfg}")' in text and "import os" in text
    script = tmp_path / "job"
    script.write_text(text + "\n")
    done = fs("wire", framework, cfg, "--check", script)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(this configuration)" in done.stdout and "warning" not in done.stdout


@pytest.mark.parametrize(
    ("framework", "value", "expected"),
    [
        ("torchair", 'os.environ.get("FUSION_SWITCH_CFG", "{cfg}")', 0),
        ("torchair", "os.getenv('FUSION_SWITCH_CFG', '{cfg}')", 0),
        ("torchair", 'os.environ["FUSION_SWITCH_CFG"]', 0),  # with a warning
        ("torchair", 'os.environ.get("FUSION_SWITCH_CFG", "/other/x.cfg")', 1),
        ("atc", '"${FUSION_SWITCH_CFG:-{cfg}}"', 0),
        ("atc", "$FUSION_SWITCH_CFG", 0),  # with a warning
        ("atc", "${FUSION_SWITCH_CFG:-/other/x.cfg}", 1),
    ],
)
def test_check_accepts_the_trial_variable(tmp_path, framework, value, expected):
    cfg = user_cfg(tmp_path)
    value = value.replace("{cfg}", str(cfg))
    script = tmp_path / "job"
    if framework == "atc":
        script.write_text(f"atc --model=m.onnx --fusion_switch_file={value}\n")
    else:
        script.write_text(f"import os\nconfig.fusion_config.fusion_switch_file = {value}\n")
    done = fs("wire", framework, cfg, "--check", script)
    assert done.returncode == expected, done.stdout + done.stderr
    if expected == 0 and str(cfg) not in value:
        assert "warning: reads only FUSION_SWITCH_CFG" in done.stdout


def test_the_mindspore_wiring_compiles_with_ge(tmp_path):
    """A review: ascend_config ge_options reach only GE, which compiles only in GRAPH_MODE at
    jit_level O2; PYNATIVE_MODE is the default, and from 2.7 the default backend on Atlas A2 is
    ms_backend: the printed set_context alone did nothing."""
    text = fs("wire", "mindspore", user_cfg(tmp_path)).stdout
    assert 'mode=ms.GRAPH_MODE, jit_config={"jit_level": "O2"}' in text
    assert '@ms.jit(backend="GE", ge_options={"global": {"ge.fusionSwitchFile":' in text
    assert "2.7" in text


GE_ONLY = "no CANN graph or UB fusion happens without GE"
MS_OPTION = '{"ge_options": {"global": {"ge.fusionSwitchFile": "{cfg}"}}}'


@pytest.mark.parametrize(
    ("script", "expected", "says"),
    [
        # the reviewer's d5: the printed snippet in MindSpore's default mode
        (f"ms.set_context(mode=ms.PYNATIVE_MODE, ascend_config={MS_OPTION})\n", 1, "PYNATIVE_MODE"),
        (f"ms.set_context(ascend_config={MS_OPTION})\n", 1, "GRAPH_MODE"),
        (f"ms.set_context(mode=ms.GRAPH_MODE, ascend_config={MS_OPTION})\n", 1, "O2"),
        (
            f"ms.set_context(mode=ms.GRAPH_MODE)\n"
            f"ms.set_context(jit_config={{'jit_level': 'O2'}}, ascend_config={MS_OPTION})\n",
            0,
            "",
        ),
        (
            '@ms.jit(backend="GE", ge_options={"global": {"ge.fusionSwitchFile": "{cfg}"}})\n'
            "def step(x):\n    return net(x)\n",
            0,
            "",
        ),
    ],
)
def test_check_warns_when_mindspore_does_not_compile_with_ge(tmp_path, script, expected, says):
    cfg = user_cfg(tmp_path)
    path = tmp_path / "train.py"
    path.write_text("import mindspore as ms\n" + script.replace("{cfg}", str(cfg)))
    done = fs("wire", "mindspore", cfg, "--check", path)
    assert done.returncode == expected, done.stdout + done.stderr
    if expected:
        assert says in done.stdout and GE_ONLY in done.stdout
    else:
        assert GE_ONLY not in done.stdout


TORCHAIR = 'config = torchair.CompilerConfig()\nconfig.fusion_config.fusion_switch_file = "{cfg}"\n'


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('config.mode = "reduce-overhead"\n', 1),
        ("config.mode = 'npugraph_ex'\n", 1),
        ('model = torch.compile(model, backend="npugraph_ex")\n', 1),
        ('config.mode = "max-autotune"\n', 0),
        ("", 0),
    ],
)
def test_check_warns_about_torchair_modes_where_the_file_may_not_take_effect(
    tmp_path, extra, expected
):
    """A review: TorchAir's compiler_config.py lists fusion_config.fusion_switch_file among the
    options that may not take effect in "reduce-overhead" mode and with npugraph_ex."""
    cfg = user_cfg(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(TORCHAIR.replace("{cfg}", str(cfg)) + extra)
    done = fs("wire", "torchair", cfg, "--check", script)
    assert done.returncode == expected, done.stdout + done.stderr
    assert ("may not take effect" in done.stdout) == bool(expected)
    # how to confirm the file was taken, in either case (TorchAir's fusion_switch_file.md)
    assert "TNG_LOG_LEVEL=0" in done.stdout and "ge.fusionSwitchFile:" in done.stdout


@pytest.mark.parametrize(
    ("framework", "wiring", "override"),
    [
        ("torchair", TORCHAIR, 'config.ge_config.optimization_switch = "ZetaRule:off;X:on"\n'),
        (
            "tf1",
            'custom_op.parameter_map["fusion_switch_file"].s = b"{cfg}"\n',
            'custom_op.parameter_map["optimization_switch"].s = b"ZetaRule:off"\n',
        ),
        (
            "tf1",
            "config = NPURunConfig(fusion_switch_file='{cfg}',\n",
            '                      optimization_switch="ZetaRule:off")\n',
        ),
        (
            "tf2",
            'npu.global_options().fusion_switch_file = "{cfg}"\n',
            'npu.global_options().optimization_switch = "ZetaRule:off"\n',
        ),
        (
            "atc",
            "atc --model=m.onnx --fusion_switch_file={cfg} \\\n",
            '    --optimization_switch="ZetaRule:off"\n',
        ),
        (
            "ge",
            'options = {{"ge.fusionSwitchFile", "{cfg}"}};\n',
            'options["ge.optimizationSwitch"] = "ZetaRule:off";\n',
        ),
    ],
)
def test_check_warns_about_optimization_switch(tmp_path, framework, wiring, override):
    """A review: ge.optimizationSwitch / optimization_switch wins over the cfg for every rule it
    names (hicann/ge options_params/operator_and_graph_compilation.md), and nothing said so."""
    cfg = user_cfg(tmp_path)
    script = tmp_path / "job"
    script.write_text(wiring.replace("{cfg}", str(cfg)) + override)
    done = fs("wire", framework, cfg, "--check", script)
    assert done.returncode == 0, done.stdout + done.stderr
    [warning] = [x for x in done.stdout.splitlines() if "optimization_switch" in x]
    assert "warning" in warning and "ZetaRule" in warning and "wins over the cfg" in warning


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        ("tf", ('parameter_map["fusion_switch_file"]', "global_options().fusion_switch_file")),
        ("tensorflow", ("TensorFlow 1.x", "TensorFlow 2.x")),
        ("torch", ("config.fusion_config.fusion_switch_file", "no fusion switch file option")),
        ("pytorch", ("PyTorch with TorchAir", "PyTorch eager")),
    ],
)
def test_an_ambiguous_framework_prints_both_variants(tmp_path, alias, expected):
    """A review: tensorflow/tf resolved silently to tf1, pytorch to torchair, torch to
    torch_npu, though each names two frameworks wired differently."""
    done = fs("wire", alias, user_cfg(tmp_path))
    assert done.returncode == 0, done.stderr
    assert all(text in done.stdout for text in expected), done.stdout
    assert f"'{alias}' can mean" in done.stdout


def test_check_with_an_ambiguous_framework_tries_both(tmp_path):
    cfg = user_cfg(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(f'npu.global_options().fusion_switch_file = "{cfg}"\n')
    assert fs("wire", "tf", cfg, "--check", script).returncode == 0
    script.write_text(f'config.fusion_config.fusion_switch_file = "{cfg}"\n')
    assert fs("wire", "torch", cfg, "--check", script).returncode == 0
    script.write_text("import tensorflow as tf\n")
    assert fs("wire", "tensorflow", cfg, "--check", script).returncode == 1


def test_msit_is_wired_with_its_hyphenated_option(tmp_path):
    """A review: msit resolved to atc, whose marker missed msit's --fusion-switch-file."""
    cfg = user_cfg(tmp_path)
    printed = fs("wire", "msit", cfg).stdout
    assert (
        "msit debug compare" in printed
        and f'--fusion-switch-file "${{FUSION_SWITCH_CFG:-{cfg}}}"' in printed
    )
    script = tmp_path / "compare.sh"
    script.write_text(f"msit debug compare -gm m.onnx -om m.om -o out --fusion-switch-file {cfg}\n")
    done = fs("wire", "msit", cfg, "--check", script)
    assert done.returncode == 0 and "(this configuration)" in done.stdout, done.stdout
    assert "passed to your script" not in fs("wire", "atc", cfg, "--check", script).stdout
