"""The package's shape, checked from the source (CPU): no import circles in miofind/ and solvers/,
no module importing another module's underscore names, db/ independent of the public API."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> dict[str, Path]:
    out = {}
    for base, pkg in ((ROOT / "miofind", "miofind"), (ROOT / "solvers", "miofind.solvers")):
        # a C extension's source (miofind/_native.c builds miofind._native) is a module like the .py files
        for f in [*base.rglob("*.py"), *base.rglob("*.c")]:
            rel = f.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = f
    return out


MODULES = _modules()


def _resolve(mod: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(mod: str) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every import anywhere in ``mod``."""
    path = MODULES[mod]
    if path.suffix != ".py":        # a C extension imports no miofind module
        return []
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, is_pkg, node.level, node.module)
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, None) if sub in MODULES else (target, a.name))
    return [(m, n) for m, n in out if m.startswith("miofind")]


def test_no_import_circles():
    graph = {m: {t for t, _ in imports(m) if t in MODULES and t != m} for m in MODULES}
    # a package's __init__ importing its own submodules is not a circle through them
    for m in graph:
        graph[m] = {t for t in graph[m] if not (t.startswith(m + ".") and MODULES[m].name == "__init__.py")}
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    assert not sccs, f"import circles: {sccs}"


def test_no_private_names_across_modules():
    bad = []
    for m in MODULES:
        for target, name in imports(m):
            if name and name.startswith("_") and not name.startswith("__") and target != m:
                bad.append(f"{m} imports {target}.{name}")
    assert not bad, "\n".join(bad)


def test_db_never_imports_the_public_api():
    bad = [f"{m} imports {t}" for m in MODULES if m.startswith("miofind.db") for t, _ in imports(m)
           if t == "miofind.api" or t.startswith("miofind.api.")]
    assert not bad, bad
