"""Start the fusion-switch server from the libraries bundled in a platform-specific .vsix.

Run with any CPython the host has: `python launch.py [--check]`. The .vsix carries one library
folder per supported CPython version (`libs/cp311`, `libs/cp312`, ...: our package plus pygls,
numpy and the rest, installed from wheels for this platform); this picks the folder of the running
interpreter and puts it first on sys.path, so nothing is downloaded and nothing needs to be
installed in that interpreter. `--check` only imports the server (the extension's probe).
"""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    libs = os.path.join(HERE, "libs", tag)
    if not os.path.isdir(libs):
        have = sorted(os.listdir(os.path.join(HERE, "libs")))
        sys.stderr.write(
            f"fusion-switch: this extension bundles the server for {', '.join(have)}; "
            f"{sys.executable} is {tag}. Set fusionSwitch.server.pythonPath to a supported "
            "interpreter.\n"
        )
        return 2
    sys.path.insert(0, libs)
    if sys.argv[1:] == ["--check"]:
        import fusion_switch  # noqa: F401

        return 0
    sys.argv = [sys.argv[0], "serve", *sys.argv[1:]]
    runpy.run_module("fusion_switch", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
