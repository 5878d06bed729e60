"""How each framework is told to read a fusion_switch.cfg, and whether a script already does.

A wrong option name is silently ignored by every one of these frameworks, so each entry names
the exact option and the public source where it was checked (repository and file, or page).
Tests (tests/cli/test_wire.py) hold the same names against the same citations.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Wiring:
    name: str
    title: str
    option: str  # the exact option name the framework reads
    snippet: str  # with {path} for the absolute configuration path
    marker: str  # regular expression: the script passes the option
    source: str  # where the option name was checked
    note: str = ""
    supported: bool = True


WIRINGS: dict[str, Wiring] = {
    w.name: w
    for w in (
        Wiring(
            "tf1",
            "TensorFlow 1.x (npu_bridge: session config or NPURunConfig)",
            "fusion_switch_file",
            (
                "# Session: the NpuOptimizer custom optimizer of the session config\n"
                "custom_op = config.graph_options.rewrite_options.custom_optimizers.add()\n"
                'custom_op.name = "NpuOptimizer"\n'
                'custom_op.parameter_map["fusion_switch_file"].s = '
                'tf.compat.as_bytes("{path}")\n'
                '# Estimator: NPURunConfig(..., fusion_switch_file="{path}")'
            ),
            r"""parameter_map\[\s*["']fusion_switch_file["']\s*\]|fusion_switch_file\s*=""",
            "Ascend/tensorflow tf_adapter/python/npu_bridge/estimator/npu/npu_config.py "
            "(NPURunConfig fusion_switch_file) and tf_adapter/util/npu_attrs.cc "
            '(session option "fusion_switch_file" -> ge.fusionSwitchFile)',
        ),
        Wiring(
            "tf2",
            "TensorFlow 2.x (npu_device global options)",
            "fusion_switch_file",
            (
                "import npu_device as npu\n"
                'npu.global_options().fusion_switch_file = "{path}"  # before npu.open()\n'
                "npu.open().as_default()"
            ),
            r"global_options\(\)\s*\.\s*fusion_switch_file\s*=|\.fusion_switch_file\s*=",
            "Ascend/tensorflow tf_adapter_2.x/python/npu_device/configs/npu_config.py "
            "(fusion_switch_file) and tf_adapter_2.x/npu_device/core/npu_wrapper.cpp "
            '(kGlobalConfigOptions "fusion_switch_file" -> ge::FUSION_SWITCH_FILE)',
            note="set it before npu.open(): global options are read once, when GE starts",
        ),
        Wiring(
            "torchair",
            "PyTorch with TorchAir (GE graph mode)",
            "fusion_config.fusion_switch_file",
            (
                "import torchair\n"
                "config = torchair.CompilerConfig()\n"
                'config.fusion_config.fusion_switch_file = "{path}"\n'
                "backend = torchair.get_npu_backend(compiler_config=config)\n"
                "model = torch.compile(model, backend=backend)"
            ),
            r"fusion_config\s*\.\s*fusion_switch_file\s*=",
            "Ascend/torchair python/torchair/configs/fusion_config.py (fusion_switch_file -> "
            "ge.fusionSwitchFile) and python/torchair/configs/compiler_config.py "
            "(CompilerConfig.fusion_config)",
            note="GE graph mode only (torch.compile with the TorchAir backend)",
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
            "MindSpore (GE backend, ascend_config ge_options)",
            "ge.fusionSwitchFile",
            (
                "import mindspore as ms\n"
                'ms.set_context(ascend_config={"ge_options": {"global": '
                '{"ge.fusionSwitchFile": "{path}"}}})'
            ),
            r"""["']ge\.fusionSwitchFile["']""",
            "mindspore-ai/mindspore mindspore/python/mindspore/context.py (_set_ge_options: "
            "levels 'global'/'session', GE option names) and "
            "https://www.mindspore.cn/docs/en/r2.3.1/api_python/mindspore/mindspore.set_context.html",
            note=(
                "set_context is being deprecated in newer MindSpore in favour of jit options; "
                "check the installed version's documentation"
            ),
        ),
        Wiring(
            "atc",
            "ATC offline model conversion",
            "--fusion_switch_file",
            "atc ... --fusion_switch_file={path}",
            r"--fusion_switch_file[= ]",
            "CANN ATC parameter reference (--fusion_switch_file); used e.g. in "
            "Ascend/ModelZoo-PyTorch ACL_PyTorch/contrib/audio/Ecapa_Tdnn/to_om.sh",
        ),
        Wiring(
            "aoe",
            "AOE tuning",
            "--fusion_switch_file",
            "aoe ... --fusion_switch_file={path}",
            r"--fusion_switch_file[= ]",
            "CANN AOE parameter reference (--fusion_switch_file, page aoepar_16_034, linked from "
            "mindspore-ai/docs docs/lite/docs/source_en/use/cloud_infer/converter_tool_ascend.md)",
        ),
        Wiring(
            "ge",
            "GE API (GEInitialize / Session options)",
            "ge.fusionSwitchFile",
            (
                "std::map<ge::AscendString, ge::AscendString> options = {\n"
                '    {"ge.fusionSwitchFile", "{path}"}};  // ge::FUSION_SWITCH_FILE\n'
                "ge::GEInitialize(options);"
            ),
            r"""["']ge\.fusionSwitchFile["']|\bFUSION_SWITCH_FILE\b""",
            "mindspore-ai/graphengine inc/external/ge/ge_api_types.h "
            '(FUSION_SWITCH_FILE = "ge.fusionSwitchFile")',
        ),
        Wiring(
            "acl",
            "ACL IR model build (aclgrphBuildInitialize)",
            "ge::ir_option::FUSION_SWITCH_FILE",
            (
                "std::map<ge::AscendString, ge::AscendString> global_options = {\n"
                '    {ge::ir_option::FUSION_SWITCH_FILE, "{path}"}};\n'
                "ge::aclgrphBuildInitialize(global_options);  // not aclgrphBuildModel"
            ),
            r"\bFUSION_SWITCH_FILE\b",
            "mindspore-ai/graphengine inc/external/ge/ge_api_types.h (namespace ir_option: "
            "FUSION_SWITCH_FILE is in global_options, 'for interface: "
            "aclgrphBuildInitialize', and not in ir_builder_suppported_options, which "
            "aclgrphBuildModel checks and rejects unknown options against)",
            note="aclgrphBuildModel rejects this option: pass it to aclgrphBuildInitialize",
        ),
        Wiring(
            "mslite",
            "MindSpore Lite converter (config file)",
            "fusion_switch_config_file_path",
            "[ascend_context]\nfusion_switch_config_file_path={path}",
            r"fusion_switch_config_file_path\s*=",
            "mindspore-ai/docs docs/lite/docs/source_en/use/cloud_infer/converter_tool_ascend.md "
            "([ascend_context] fusion_switch_config_file_path)",
        ),
    )
}
ALIASES = {
    "tensorflow": "tf1",
    "tf": "tf1",
    "pytorch": "torchair",
    "torch": "torch_npu",
    "ms": "mindspore",
    "mindspore_lite": "mslite",
    "msit": "atc",
}


RELATIVE = "relative to the job's working directory; use an absolute path"
TILDE = (
    "'~' is not expanded here ({where}): the framework looks for a folder named '~'; "
    "use the absolute path"
)


@dataclass(frozen=True)
class Finding:
    line: int
    text: str
    names_this_cfg: bool
    note: str = ""  # why a path is not this configuration, or a warning about it


def resolve(name: str) -> Wiring | None:
    key = name.strip().lower().replace("-", "_")
    return WIRINGS.get(ALIASES.get(key, key))


def snippet(wiring: Wiring, path: str) -> str:
    return wiring.snippet.replace("{path}", path)


def find_wiring(wiring: Wiring, script: str, cfg_path: str) -> list[Finding]:
    """Lines of `script` that pass the option, and whether each names this configuration
    (its absolute path or its file name; a variable holding the path is not followed)."""
    marker = re.compile(wiring.marker)
    shell = wiring.option.startswith("--")
    out = []
    for number, line in enumerate(script.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("//") else ""
        if code and marker.search(code):
            this, note = names_this(code, cfg_path, shell=shell)
            out.append(Finding(number, line.strip(), this, note))
    return out


def names_this(code: str, cfg_path: str, shell: bool = False) -> tuple[bool, str]:
    """Whether a path in ``code`` is this configuration, and a note: its absolute path, or a
    relative one its path ends with. A file of the same name elsewhere is not (a review:
    "/data/old_experiment/fusion_switch.cfg" passed as this configuration), nor "~/name":
    nothing expands "~" in a Python string or after "--option=" (a review), only a shell
    does, in a word of its own (``shell``). A relative path is recognised, with a warning:
    it resolves against the job's working directory (a review: `cd device$i` per rank)."""
    name = cfg_path.replace("\\", "/").rsplit("/", 1)[-1]
    if cfg_path in code:
        return True, ""
    if re.search(r"\$(\(\s*pwd\s*\)|\{PWD\}|PWD\b)[/\\]+" + re.escape(name), code):
        return True, RELATIVE  # $(pwd)/name, $PWD/name: the job's working directory
    if re.search(r"\$(\{\w+\}|\w+)[/\\]+" + re.escape(name), code):
        return True, ""  # ${DIR}/name, $DIR/name: not followed, may be this file
    ours = os.path.normpath(cfg_path).replace("\\", "/")
    tilde = ""
    for match in re.finditer(r"[^\s\"'=,(){}\[\]]*" + re.escape(name), code):
        path = match.group().replace("\\", "/")
        before = code[: match.start()]
        if path.startswith("~"):
            expanded = (shell and (not before or before[-1] in " \t")) or re.search(
                r"expanduser\(\s*[rf]?[\"']$", before
            )
            if os.path.normpath(os.path.expanduser(path)).replace("\\", "/") == ours:
                if expanded:
                    return True, ""
                where = "after '='" if before.endswith("=") else "in a string"
                tilde = TILDE.format(where=where)
        elif path.startswith("/") or re.match(r"[A-Za-z]:/", path):
            if os.path.normpath(path).replace("\\", "/") == ours:
                return True, ""
        elif path != name and not path.startswith("./") and "/" not in path:
            continue  # another name ending with it: "my_fusion_switch.cfg"
        else:
            relative = os.path.normpath(path)
            if relative == name or ours.endswith("/" + relative):
                return True, RELATIVE  # a review: ranks run in folders of their own
    return False, tilde
