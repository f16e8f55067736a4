"""Writes src/seojobs/kinds/site_audit/schemaorg.json, the audit's offline subset of the
schema.org vocabulary (types, their parents, the properties each declares), from the
TypeScript declarations of the npm package ``schema-dts`` (``npm pack schema-dts@2.1.0``;
its ``dist/schema.d.ts`` is generated from schema.org's published vocabulary):

    python scripts/schemaorg_vocabulary.py package/dist/schema.d.ts

Only schema.org's own names are kept (not the external vocabularies the file also types).
The vocabulary is schema.org's, under CC BY-SA 3.0 (https://schema.org/docs/terms.html);
schema-dts is Apache-2.0. Run by hand when the pin moves; never at run time.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/seojobs/kinds/site_audit/schemaorg.json"
BASE = re.compile(r"^interface (\w+)Base extends ([^{]+)\{\n(.*?)^\}", re.M | re.S)
LEAF = re.compile(r'^export interface (\w+)Leaf extends ([^{]+)\{\n\s*"@type": "(\w+)";', re.M)
ENUM = re.compile(r'^export type (\w+) = "https://schema\.org/', re.M)
PROP = re.compile(r'^    "(\w+)"\?:', re.M)
DATA = ("Boolean", "Date", "DateTime", "Number", "Text", "Time", "URL", "Integer", "Float")


def parents(extends: str) -> list[str]:
    names = [n.strip() for n in extends.split(",")]
    return [n[: -len("Base")] for n in names if n.endswith("Base") and "_" not in n]


def main(path: str) -> None:
    text = Path(path).read_text()
    bases: dict[str, dict[str, list[str]]] = {}
    for name, extends, body in BASE.findall(text):
        if "_" not in name:
            bases[name] = {"parents": parents(extends), "props": PROP.findall(body)}
    types: dict[str, list[str]] = {}
    for leaf, extends, type_name in LEAF.findall(text):
        if "_" in leaf or type_name != leaf:
            continue
        # A leaf extends its own Base (declaring properties) or its parents' Bases directly.
        types[type_name] = parents(extends)
    props = {name: sorted(b["props"]) for name, b in bases.items() if b["props"]}
    bases_parents = {name: b["parents"] for name, b in bases.items()}
    for name in ENUM.findall(text):
        if "_" not in name:
            types.setdefault(name, ["Enumeration"])
    for name in DATA:
        types.setdefault(name, ["DataType"])
    vocabulary = {
        "source": "schema-dts 2.1.0 (npm), generated from schema.org's vocabulary",
        "licence": "schema.org vocabulary: CC BY-SA 3.0 (https://schema.org/docs/terms.html)",
        "types": dict(sorted(types.items())),
        "bases": dict(sorted(bases_parents.items())),
        "properties": dict(sorted(props.items())),
    }
    OUT.write_text(json.dumps(vocabulary, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"{len(types)} types, {sum(map(len, props.values()))} properties -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
