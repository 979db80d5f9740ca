"""The "Python 3 (nbtools)" kernelspec: shipped as package data, installed with the package, and a
kernel started from it has the magics without `%load_ext`."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "jupyter-config" / "kernels" / "nbtools" / "kernel.json"


def test_the_kernelspec_preloads_the_extension():
    spec = json.loads(SHIPPED.read_text())
    assert spec["display_name"] == "Python 3 (nbtools)"
    assert spec["language"] == "python"
    # "python" is replaced by the interpreter of whoever starts the kernel (jupyter_client rule),
    # so the kernel runs in the environment nbtools is installed in.
    assert spec["argv"][:3] == ["python", "-m", "ipykernel_launcher"]
    # The magics module, not the package: the package stays unloaded as an extension, so a notebook
    # written for the plain kernel (`%load_ext nbtools` in its first cell) runs here silently instead
    # of printing "The nbtools extension is already loaded", which strict nbval reports as a diff.
    assert "{connection_file}" in spec["argv"] and "--ext=nbtools.magics" in spec["argv"]


def test_the_wheel_installs_it_as_shared_data():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shared = project["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared == {"jupyter-config/kernels/nbtools": "share/jupyter/kernels/nbtools",
                      "jupyter-config/jupyter_server_config.d/nbtools.json":
                          "etc/jupyter/jupyter_server_config.d/nbtools.json"}
    # Only the kernelspec and the server extension's switch (tests/test_jupyter_server.py) are shipped:
    # an IPython profile config file would clash with other packages.
    shipped = sorted(str(path.relative_to(ROOT / "jupyter-config")) for path in (ROOT / "jupyter-config").rglob("*")
                     if path.is_file())
    assert shipped == ["jupyter_server_config.d/nbtools.json", "kernels/nbtools/kernel.json",
                       "kernels/nbtools/logo-32x32.png", "kernels/nbtools/logo-64x64.png"]


def test_the_kernelspec_has_its_logos():
    """JupyterLab's launcher and kernel picker show `logo-64x64.png`/`logo-32x32.png` from the
    kernelspec's folder; without them the "Python 3 (nbtools)" kernel showed a blank initial."""
    from PIL import Image

    for size in (32, 64):
        with Image.open(SHIPPED.parent / f"logo-{size}x{size}.png") as logo:
            assert logo.format == "PNG" and logo.size == (size, size)
            assert len(logo.convert("RGB").getcolors(maxcolors=size * size)) > 8  # drawn, not a blank square


def test_it_is_installed_in_this_environment_and_up_to_date():
    found = KernelSpecManager().get_kernel_spec("nbtools")
    assert Path(found.resource_dir) == Path(sys.prefix) / "share" / "jupyter" / "kernels" / "nbtools"
    installed = json.loads((Path(found.resource_dir) / "kernel.json").read_text())
    assert installed == json.loads(SHIPPED.read_text()), "reinstall: pip install -e '.[dev]'"
    assert found.display_name == "Python 3 (nbtools)"


def test_a_kernel_from_it_has_the_magics_without_load_ext(new_kernel):
    cells = [
        "import sys\nprint(sys.executable)",
        "print('nbtools.magics' in get_ipython().extension_manager.loaded)",
        "%%tool --hints read-only\ndef ping() -> str:\n    'Answer pong.'\n    return 'pong'",
        "from nbtools import registry, call_func\nprint(registry.names(), call_func('ping', {}))",
        "%tools",
        "%load_ext nbtools",  # a notebook written for the plain kernel: no "already loaded" text
        "print(registry.names(), sum(type(each).__name__ == 'ToolMagics' "
        "for each in get_ipython().magics_manager.registry.values()))",
        "%unload_ext nbtools",
        "print('tool' in get_ipython().magics_manager.magics['cell'])",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    new_kernel("nbtools").execute_notebook(notebook)  # a kernel of its own, from this kernelspec
    printed = [cell.outputs[0].get("text", "").strip() if cell.outputs else "" for cell in notebook.cells]
    assert Path(printed[0]) == Path(sys.executable)
    assert printed[1] == "True"
    assert printed[2] == "registered: ping (read-only)"
    assert printed[3] == "['ping'] pong"
    assert "ping" in notebook.cells[4].outputs[0]["data"]["text/plain"]
    assert notebook.cells[5].outputs == []
    assert printed[6] == "['ping'] 1"  # tools kept, magics not doubled
    assert notebook.cells[7].outputs == [] and printed[8] == "False"  # and unloading removes them


def test_the_plain_kernel_does_not_preload_it():
    """The ordinary kernel stays ordinary: nbtools only loads on request."""
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert not any("nbtools" in part for part in spec.argv)
