"""How each framework is told to read a fusion_switch.cfg, and whether a script already does.

A wrong option name is silently ignored by every one of these frameworks, so each entry names
the exact option and the public source where it was checked (repository and file, or page).
Tests (tests/cli/test_wire.py) hold the same names against the same citations.
"""

from __future__ import annotations

from dataclasses import dataclass

from .trials import CFG_VARIABLE

# What a script that wires a framework is written in: how its comments look, where doctor looks
PYTHON, CPP, COMMAND, CONFIG = "python", "cpp", "command", "config"
SUFFIXES = {
    PYTHON: (".py",),
    CPP: (".cpp", ".cc", ".cxx", ".h", ".hpp"),
    COMMAND: (".sh", ".py", ".txt"),  # a shell script, or a command run from Python
    CONFIG: (".ini", ".txt", ".cfg"),
}


@dataclass(frozen=True)
class Wiring:
    name: str
    title: str
    option: str  # the exact option name the framework reads
    snippet: str  # with {path} for the absolute configuration path
    marker: str  # regular expression: a line where the framework's API takes the option
    source: str  # where the option name was checked
    note: str = ""
    supported: bool = True
    kind: str = PYTHON
    command: str = ""  # COMMAND: the program whose command line takes the option (atc, aoe)
    flags: tuple[str, ...] = ()  # COMMAND: the option as that program spells it
    call: str = ""  # also the keyword `option=` inside a call of this name (NPURunConfig)
    owner: str = ""  # also `x.option =` where x = ...owner() (npu.global_options)
    needs: str = ""  # regular expression the script must also hold somewhere (ge_options)


WIRINGS: dict[str, Wiring] = {
    w.name: w
    for w in (
        Wiring(
            "tf1",
            "TensorFlow 1.x (npu_bridge: session config or NPURunConfig)",
            "fusion_switch_file",
            (
                "import os\n"
                "# Session: the NpuOptimizer custom optimizer of the session config\n"
                "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()\n"
                'custom_op.name = "NpuOptimizer"\n'
                'custom_op.parameter_map["fusion_switch_file"].s = '
                'tf.compat.as_bytes(os.environ.get("{variable}", "{path}"))\n'
                '# Estimator: NPURunConfig(..., fusion_switch_file=os.environ.get("{variable}", '
                '"{path}"))'
            ),
            r"""parameter_map\[\s*["']fusion_switch_file["']\s*\]""",
            "hicann/tensorflow tf_adapter/python/npu_bridge/estimator/npu/npu_config.py "
            "(NPURunConfig fusion_switch_file) and hicann/tensorflow tf_adapter/util/npu_attrs.cc "
            '(NpuOptimizer parameter "fusion_switch_file" -> ge.fusionSwitchFile)',
            call="NPURunConfig",
        ),
        Wiring(
            "tf2",
            "TensorFlow 2.x (npu_device global options)",
            "fusion_switch_file",
            (
                "import os\n"
                "import npu_device as npu\n"
                'npu.global_options().fusion_switch_file = os.environ.get("{variable}", "{path}")'
                "  # before npu.open()\n"
                "npu.open().as_default()"
            ),
            r"global_options\(\)\s*\.\s*fusion_switch_file\s*=(?!=)",
            "hicann/tensorflow tf_adapter_2.x/python/npu_device/configs/npu_config.py "
            "(fusion_switch_file) and hicann/tensorflow "
            "tf_adapter_2.x/npu_device/core/npu_wrapper.cpp "
            '(kGlobalConfigOptions "fusion_switch_file" -> ge::FUSION_SWITCH_FILE)',
            note="set it before npu.open(): global options are read once, when GE starts",
            owner="global_options",
        ),
        Wiring(
            "torchair",
            "PyTorch with TorchAir (GE graph mode)",
            "fusion_config.fusion_switch_file",
            (
                "import os\n"
                "import torchair\n"
                "config = torchair.CompilerConfig()\n"
                'config.fusion_config.fusion_switch_file = os.environ.get("{variable}", "{path}")\n'
                "backend = torchair.get_npu_backend(compiler_config=config)\n"
                "model = torch.compile(model, backend=backend)"
            ),
            r"fusion_config\s*\.\s*fusion_switch_file\s*=(?!=)",
            "Ascend/torchair python/torchair/configs/fusion_config.py (fusion_switch_file -> "
            "ge.fusionSwitchFile) and python/torchair/configs/compiler_config.py "
            "(CompilerConfig.fusion_config)",
            note=(
                "GE graph mode only (torch.compile with the TorchAir backend, mode "
                '"max-autotune"); to confirm the file was taken, run with TNG_LOG_LEVEL=0 and look '
                'for "ge.fusionSwitchFile:" in the log (Ascend/torchair '
                "docs/zh/ascend_ir/features/advanced/fusion_switch_file.md)"
            ),
        ),
        Wiring(
            "torch_npu",
            "PyTorch eager (torch_npu)",
            "",
            (
                "# torch_npu in eager (single-op) mode has no fusion switch file option: graph\n"
                "# fusion does not run there. Compile with TorchAir to use {path}:\n"
                "#   fusion-switch wire torchair {path}"
            ),
            r"(?!)",
            "torch_npu exposes no fusion switch option; TorchAir does "
            "(Ascend/torchair python/torchair/configs/fusion_config.py)",
            supported=False,
        ),
        Wiring(
            "mindspore",
            'MindSpore (GE backend: GRAPH_MODE at jit_level O2, or jit(backend="GE"))',
            "ge.fusionSwitchFile",
            (
                "import os\n"
                "import mindspore as ms\n"
                "# MindSpore 2.3 to 2.6: ge_options reach GE, which compiles only in GRAPH_MODE at "
                "jit_level O2\n"
                'ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O2"},\n'
                '               ascend_config={"ge_options": {"global": {'
                '"ge.fusionSwitchFile": os.environ.get("{variable}", "{path}")}}})\n'
                "# MindSpore 2.7 and later: set_context's ge_options and jit_config are deprecated "
                "and the default\n"
                "# backend on Atlas A2 and later is ms_backend, not GE: compile the step with GE "
                "instead\n"
                '# @ms.jit(backend="GE", ge_options={"global": {'
                '"ge.fusionSwitchFile": os.environ.get("{variable}", "{path}")}})\n'
                "# def train_step(*inputs): ..."
            ),
            # a key of the ge_options dict (the same key in a C++ map is `ge`)
            r"""["']ge\.fusionSwitchFile["']\s*:"""
            r"""|\[\s*["']ge\.fusionSwitchFile["']\s*\]\s*=(?!=)""",
            "mindspore-ai/mindspore mindspore/python/mindspore/context.py (set_context: mode "
            "default PYNATIVE_MODE; ascend_config ge_options 'global'/'session', deprecated for "
            'mindspore.jit) and mindspore/python/mindspore/common/api.py (jit: backend "GE" '
            "only in graph mode, ge_options only with it; default backend GE on Atlas training "
            "series, ms_backend on Atlas A2 and others); "
            "https://www.mindspore.cn/docs/en/master/api_python/mindspore/mindspore.JitConfig.html "
            "(jit_level O2: GraphEngine, GRAPH mode only); "
            "https://www.mindspore.cn/docs/zh-CN/r2.8.0/api_python/mindspore/mindspore.jit.html",
            note=(
                "without GE (PYNATIVE_MODE, jit_level O0/O1, ms_backend) no CANN graph or UB "
                "fusion happens and the file is ignored; from MindSpore 2.9 "
                'backend="GE" is deprecated (mindspore.jit r2.10.0 documentation)'
            ),
            needs=r"\bge_options\b",
        ),
        Wiring(
            "atc",
            "ATC offline model conversion",
            "--fusion_switch_file",
            'atc ... --fusion_switch_file="${{variable}:-{path}}"',
            r"(?!)",  # a command line that starts with atc: see command and flags
            "hicann/ge docs/zh/user_guides/atc_tools/CLI_options/--fusion_switch_file.md; used "
            "e.g. in Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/audio/Ecapa_Tdnn/to_om.sh",
            kind=COMMAND,
            command="atc",
            flags=("--fusion_switch_file",),
        ),
        Wiring(
            "msit",
            "msit debug compare (accuracy comparison; it rebuilds the om with atc)",
            "--fusion-switch-file",
            "msit debug compare -gm model.onnx -om model.om -o out "
            '--fusion-switch-file "${{variable}:-{path}}"',
            r"(?!)",  # a command line that starts with msit: see command and flags
            "Ascend/msit msit/components/debug/compare/msquickcmp/__main__.py (compare: "
            '"--fusion-switch-file", dest fusion_switch_file)',
            note="msit gives the file to the atc it runs; for an atc command of your own: "
            "fusion-switch wire atc",
            kind=COMMAND,
            command="msit",
            flags=("--fusion-switch-file",),
        ),
        Wiring(
            "aoe",
            "AOE tuning",
            "--fusion_switch_file",
            'aoe ... --fusion_switch_file="${{variable}:-{path}}"',
            r"(?!)",  # a command line that starts with aoe: see command and flags
            "CANN AOE command-line reference, --fusion_switch_file: https://www.hiascend.com/"
            "document/detail/zh/CANNCommunityEdition/82RC1alpha002/devaids/aoe/aoerc_16_0050.html",
            kind=COMMAND,
            command="aoe",
            flags=("--fusion_switch_file",),
        ),
        Wiring(
            "ge",
            "GE API (GEInitialize / Session options)",
            "ge.fusionSwitchFile",
            (
                'const char *trial = std::getenv("{variable}");'
                "  // <cstdlib>; set by fusion-switch bisect\n"
                "std::map<ge::AscendString, ge::AscendString> options = {\n"
                '    {"ge.fusionSwitchFile", trial != nullptr ? trial : "{path}"}};'
                "  // ge::FUSION_SWITCH_FILE\n"
                "ge::GEInitialize(options);"
            ),
            # a C++ option map: {"ge.fusionSwitchFile", v}, options["ge.fusionSwitchFile"],
            # emplace / insert, or the constant (not an environment variable: GE reads none)
            r"""\{\s*"ge\.fusionSwitchFile"\s*,|\[\s*"ge\.fusionSwitchFile"\s*\]"""
            r"""|(?:emplace|insert)\s*\(\s*\{?\s*"ge\.fusionSwitchFile"\s*,"""
            r"""|\bge::FUSION_SWITCH_FILE\b|[{\[(,]\s*FUSION_SWITCH_FILE\s*[,\])]""",
            "hicann/ge inc/graph_metadef/external/ge_common/ge_common_api_types.h "
            '(FUSION_SWITCH_FILE = "ge.fusionSwitchFile"; inc/external/ge/ge_api_types.h '
            "includes it)",
            kind=CPP,
        ),
        Wiring(
            "acl",
            "ACL IR model build (aclgrphBuildInitialize)",
            "ge::ir_option::FUSION_SWITCH_FILE",
            (
                'const char *trial = std::getenv("{variable}");'
                "  // <cstdlib>; set by fusion-switch bisect\n"
                "std::map<ge::AscendString, ge::AscendString> global_options = {\n"
                '    {ge::ir_option::FUSION_SWITCH_FILE, trial != nullptr ? trial : "{path}"}};\n'
                "ge::aclgrphBuildInitialize(global_options);  // not aclgrphBuildModel"
            ),
            r"\bir_option::FUSION_SWITCH_FILE\b",
            "hicann/ge inc/graph_metadef/external/ge_common/ge_common_api_types.h (namespace "
            "ir_option: FUSION_SWITCH_FILE is in global_options, 'for interface: "
            "aclgrphBuildInitialize', and not in ir_builder_suppported_options, which "
            "aclgrphBuildModel checks and rejects unknown options against)",
            note="aclgrphBuildModel rejects this option: pass it to aclgrphBuildInitialize",
            kind=CPP,
        ),
        Wiring(
            "mslite",
            "MindSpore Lite converter (config file)",
            "fusion_switch_config_file_path",
            (
                "# config.ini, the converter's --configFile:\n"
                "[ascend_context]\n"
                "fusion_switch_config_file_path={path}\n"
                "# converter_lite --fmk=ONNX --modelFile=model.onnx --configFile=config.ini "
                "--optimize=ascend_oriented --outputFile=model"
            ),
            r"^\s*fusion_switch_config_file_path\s*=",
            "mindspore-ai/docs docs/lite/docs/source_en/mindir/converter_tool_ascend.md "
            "([ascend_context] fusion_switch_config_file_path; converter_lite --configFile "
            "--optimize=ascend_oriented)",
            note=(
                "a config file reads no environment variable: for bisect -j, have the job write "
                "this line with the trial's {cfg} before it runs the converter"
            ),
            kind=CONFIG,
        ),
    )
}
COMMANDS = tuple(w.command for w in WIRINGS.values() if w.command)  # programs that take the option
ALIASES = {"ms": "mindspore", "mindspore_lite": "mslite"}
# Names of two frameworks wired differently: `wire` shows both (a review: tf resolved to tf1
# and torch to torch_npu, silently)
AMBIGUOUS = {
    "tensorflow": ("tf1", "tf2"),
    "tf": ("tf1", "tf2"),
    "pytorch": ("torchair", "torch_npu"),
    "torch": ("torchair", "torch_npu"),
}


def resolve(name: str) -> list[Wiring]:
    """The frameworks ``name`` means: one, two for an ambiguous name, none if unknown."""
    key = name.strip().lower().replace("-", "_")
    if key in AMBIGUOUS:
        return [WIRINGS[k] for k in AMBIGUOUS[key]]
    wiring = WIRINGS.get(ALIASES.get(key, key))
    return [wiring] if wiring else []


def snippet(wiring: Wiring, path: str) -> str:
    return wiring.snippet.replace("{path}", path).replace("{variable}", CFG_VARIABLE)
