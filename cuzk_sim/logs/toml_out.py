"""Write the small TOML documents `calibrate` and `scenario-from-log` produce.

Profiles and scenarios are tables of strings, numbers, booleans and lists of scalars, so
a few lines cover them (the standard library reads TOML but does not write it). Keys
whose value is a dict become `[table]` headers; lists of dicts `[[array]]` tables.
"""

from __future__ import annotations

import json


def _scalar(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        if "\n" in v and '"""' not in v and "\\" not in v:
            return '"""\n' + v.strip("\n") + '\n"""'
        return json.dumps(v)  # a TOML basic string is a JSON string for our text
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_table(v: object) -> bool:
    return isinstance(v, dict)


def _is_table_array(v: object) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps(doc: dict, header: str = "") -> str:
    out: list[str] = [f"# {line}".rstrip() for line in header.splitlines()]
    if out:
        out.append("")

    def emit(table: dict, path: str) -> None:
        for k, v in table.items():
            if not _is_table(v) and not _is_table_array(v):
                out.append(f"{_key(k)} = {_scalar(v)}")
        for k, v in table.items():
            sub = f"{path}.{_key(k)}" if path else _key(k)
            if _is_table(v):
                out.append("")
                out.append(f"[{sub}]")
                emit(v, sub)
            elif _is_table_array(v):
                for item in v:
                    out.append("")
                    out.append(f"[[{sub}]]")
                    emit(item, sub)

    emit(doc, "")
    return "\n".join(out).strip("\n") + "\n"


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)
