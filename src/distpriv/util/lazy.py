"""Lazy re-exports for the package ``__init__`` files (PEP 562 module ``__getattr__``).

Why: ``import distpriv`` used to import every submodule — scipy, pandas, DuckDB, sklearn, the
attacks — before ``distpriv --help`` could print a line (2–2.5 s against 0.5 s for
``import numpy, pandas``). A package now names where each public name lives and imports that
submodule on first attribute access; ``from distpriv import calibrate``, ``dir(distpriv)`` and
``distpriv.__all__`` behave as before.

Each package declares its exports once, as the imports of its ``if TYPE_CHECKING:`` block
(what type checkers read, since they do not follow a module ``__getattr__``);
:func:`attach_declared` reads that block from the package's source and derives the lazy map
and ``__all__`` from it, so the two views cannot drift apart.
"""

from __future__ import annotations

import _ast  # the compiler's node classes; `ast` itself would add its own imports (enum, …)
import importlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .import_gc import loading

__all__ = ["attach", "attach_declared", "declared_exports"]


class _LazyPackage(types.ModuleType):
    """A package module whose exported names win over same-named submodules.

    The import system binds ``package.release`` to the *submodule* ``release.py`` once that
    submodule is imported. With eager ``from .release import release`` the function was bound
    afterwards and won; lazily, the submodule would stay. Rebinding here keeps the old meaning.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_lazy_exports", {})
        if (
            name in exports
            and exports[name][1] is not None
            and isinstance(value, types.ModuleType)
            and value.__name__ == f"{self.__name__}.{name}"
            and hasattr(value, exports[name][1])
        ):
            value = getattr(value, exports[name][1])
        super().__setattr__(name, value)


def attach(
    package: str,
    exports: Mapping[str, Sequence[str]],
    modules: Sequence[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package``, importing on first use.

    Parameters
    ----------
    package : str
        ``__name__`` of the package.
    exports : mapping of str to sequence of str
        Submodule (relative, without the dot) → the public names defined there.
    modules : sequence of str
        Submodules that are themselves public names (``distpriv.local``).

    Returns
    -------
    (getattr, dir)
        To assign to the package's ``__getattr__`` and ``__dir__``.
    """
    where: dict[str, tuple[str, str | None]] = {m: (m, None) for m in modules}
    for module, names in exports.items():
        for name in names:
            where[name] = (module, name)
    mod = sys.modules[package]
    mod.__class__ = _LazyPackage
    mod._lazy_exports = where  # type: ignore[attr-defined]
    namespace = mod.__dict__

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = where[name]
        with loading():  # a command's imports: no collections (distpriv.util.import_gc)
            sub = importlib.import_module(f"{package}.{module}")
        value = sub if attr is None else getattr(sub, attr)
        namespace[name] = value  # later look-ups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__


def declared_exports(init_file: str) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """The exports a package ``__init__`` declares in its ``if TYPE_CHECKING:`` block.

    Parameters
    ----------
    init_file : str
        Path of the package's ``__init__.py``.

    Returns
    -------
    exports : dict of str to tuple of str
        Submodule (relative, without the dot) → the names imported from it
        (``from .domains import Grid`` gives ``{"domains": ("Grid",)}``).
    modules : tuple of str
        Submodules imported as themselves (``from . import local``).

    Raises
    ------
    ImportError
        When the block holds anything but ``from .x import name`` statements (an absolute
        import, an ``as`` rename or other code would not mean the same at run time).
    """
    with open(init_file, encoding="utf-8") as fh:
        tree = compile(fh.read(), init_file, "exec", _ast.PyCF_ONLY_AST)
    if not isinstance(tree, _ast.Module):  # what compile gives in "exec" mode
        raise ImportError(f"{init_file}: not a module")
    exports: dict[str, list[str]] = {}
    modules: list[str] = []
    for node in tree.body:
        if not (
            isinstance(node, _ast.If)
            and isinstance(node.test, _ast.Name)
            and node.test.id == "TYPE_CHECKING"
        ):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, _ast.ImportFrom) and stmt.level == 1):
                raise ImportError(
                    f"{init_file}: line {stmt.lineno}: the TYPE_CHECKING block declares the "
                    "lazy exports and may only hold `from .module import name` statements"
                )
            names = [alias.name for alias in stmt.names]
            if any(alias.asname not in (None, alias.name) for alias in stmt.names):
                raise ImportError(
                    f"{init_file}: line {stmt.lineno}: a lazy export cannot be renamed with `as`"
                )
            if stmt.module is None:
                modules.extend(names)
            else:
                exports.setdefault(stmt.module, []).extend(names)
    return {module: tuple(names) for module, names in exports.items()}, tuple(modules)


def attach_declared(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """:func:`attach` for the exports declared in ``init_file`` (:func:`declared_exports`).

    Parameters
    ----------
    package : str
        ``__name__`` of the package.
    init_file : str
        ``__file__`` of the package (its ``__init__.py``).

    Returns
    -------
    (getattr, dir, all)
        To assign to the package's ``__getattr__``, ``__dir__`` and ``__all__``; ``__all__``
        lists the exported names sorted, then the exported submodules in declared order.
    """
    exports, modules = declared_exports(init_file)
    getattr_, dir_ = attach(package, exports, modules)
    names = sorted(name for names in exports.values() for name in names) + list(modules)
    return getattr_, dir_, names
