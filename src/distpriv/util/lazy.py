"""Lazy re-exports for the package ``__init__`` files (PEP 562 module ``__getattr__``).

Why: ``import distpriv`` used to import every submodule — scipy, pandas, DuckDB, sklearn, the
attacks — before ``distpriv --help`` could print a line (2–2.5 s against 0.5 s for
``import numpy, pandas``). A package now names where each public name lives and imports that
submodule on first attribute access; ``from distpriv import calibrate``, ``dir(distpriv)`` and
``distpriv.__all__`` behave as before.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .import_gc import loading

__all__ = ["attach"]


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
