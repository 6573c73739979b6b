"""One registry of named things, used for every kind the toolkit looks up by name: selection strategies, stuck
detectors, optimizers, retrievers and tool sets.

    STRATEGIES = Registry("selection strategy", group="tool_selection.strategies",
                          builtins=["tool_selection.strategies.native", ...])

    @STRATEGIES.register                       # bare: the name is the object's ``name`` attribute
    class Native(SelectionStrategy): ...

    @OPTIMIZERS.register(name="bootstrap")     # with arguments
    def bootstrap(...): ...

    STRATEGIES.get("nativ")                    # UnknownStrategyError: ... (did you mean 'native'?) ...
    STRATEGIES.names()                         # built-ins first, then registered, then entry points

Things register three ways: a decorator, ``add``, or an entry point in the registry's group (a third-party package
declares ``[project.entry-points."tool_selection.strategies"] mine = "my_package.module:MyStrategy"``). Built-in
modules and entry points are imported on first lookup, and an entry point's object only when it is asked for, so
listing names stays light. Built-in strategies, detectors, optimizers and retrievers come from ``builtins``
modules, built-in tool sets from the entry points ``pyproject.toml`` declares; a third-party package uses the
entry-point groups (docs/guide/architecture.md, "Adding a strategy or tool set from another package").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar, overload

from tool_selection.errors import ToolSelectionError, close_matches

__all__ = ["Registry", "format_listing"]

T = TypeVar("T")


def _name_attribute(entry: Any) -> str:
    name = getattr(entry, "name", None)
    if not isinstance(name, str) or not name:
        what = getattr(entry, "__qualname__", repr(entry))
        raise TypeError(f"{what} has no name attribute; give it one, or register it with register(name=...)")
    return name


class Registry(Generic[T]):
    """Named entries of one kind.

    ``kind``: what an entry is, in messages (``"selection strategy"``). ``group``: the entry-point group third
    parties register under. ``builtins``: modules that register the built-in entries when imported; ``declared``:
    their names, so that a name can be checked without importing them (``check_name``). ``check``:
    raises ``TypeError`` for an object that cannot be an entry; ``"module:function"`` names one that is imported
    when first needed (a registry declared below the module that knows its entries' shape). ``error``: the class of an unknown-name error, and
    ``conflict_error`` of a name registered twice. ``hint``: a sentence added to the unknown-name error.
    """

    def __init__(self, kind: str, *, group: str | None = None, builtins: Sequence[str] = (),
                 check: Callable[[Any], None] | str | None = None, error: type[Exception] = ToolSelectionError,
                 conflict_error: type[Exception] = ToolSelectionError, hint: str = "", declared: Sequence[str] = ()):
        self.kind, self.group, self.error, self.conflict_error, self.hint = kind, group, error, conflict_error, hint
        self._builtins, self.declared = tuple(builtins), tuple(declared)
        self._check_spec = check
        self._entries: dict[str, T] = {}
        self._entry_point_cache: dict[str, EntryPoint] | None = None
        self._loading = False
        self._loaded = not self._builtins

    @property
    def _check(self) -> Callable[[Any], None] | None:
        if isinstance(self._check_spec, str):
            module, _, function = self._check_spec.partition(":")
            self._check_spec = getattr(importlib.import_module(module), function)
        return self._check_spec

    # ------------------------------------------------------------ registering
    @overload
    def register(self, entry: T, /) -> T: ...

    @overload
    def register(self, *, name: str | None = None) -> Callable[[T], T]: ...

    def register(self, entry: Any = None, /, *, name: str | None = None) -> Any:
        """Register ``entry`` under its ``name`` attribute (a bare decorator), or under ``name`` (a decorator
        with arguments); returns the entry unchanged."""
        if entry is None:
            return lambda target: self.register(target) if name is None else self.add(name, target)
        if name is not None:
            raise TypeError("register takes an entry or keyword arguments, not both")
        if self._check is not None:
            self._check(entry)  # before its name is looked for, so that the message says what is wrong
        return self.add(_name_attribute(entry), entry)

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name``; a name taken by another entry is an error that says how to fix it."""
        if self._check is not None:
            self._check(entry)
        existing = self._entries.get(name)
        if existing is not None and existing is not entry and existing != entry:
            raise self.conflict_error(f"{self.kind.capitalize()} name {name!r} is taken by {_describe(existing)}; "
                                      f"give {_describe(entry)} another name.")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> T:
        """Remove ``name`` (a test's temporary entry) and return its entry."""
        if name not in self._entries:
            raise self.error(self.unknown([name]))
        return self._entries.pop(name)

    # --------------------------------------------------------------- lookups
    def get(self, name: str) -> T:
        """The entry registered as ``name``; an unknown name raises ``error`` naming close matches and every
        known name."""
        self._load_builtins()
        if name in self._entries:
            return self._entries[name]
        entry_point = self._entry_points().get(name) if isinstance(name, str) else None
        if entry_point is None:
            raise self.error(self.unknown([name]))
        return self.add(name, self._load(entry_point))

    def names(self) -> list[str]:
        """Every known name: the built-ins in their declared order, registered ones in registration order, then
        entry points not loaded."""
        self._load_builtins()
        declared = [name for name in self.declared if name in self._entries]
        return list(dict.fromkeys([*declared, *self._entries, *self._entry_points()]))

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` for every known name (entry points are loaded)."""
        return [(name, self.get(name)) for name in self.names()]

    def listing(self, summary: Callable[[T], str]) -> list[tuple[str, str]]:
        """``(name, summary(entry))`` for every known name: what ``toolsel`` lists and the docs show."""
        return [(name, summary(entry)) for name, entry in self.items()]

    def check_names(self, names: Iterable[str]) -> list[str]:
        """``names`` stripped, without blanks or repeats; every unknown one named in one error."""
        names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        if not names:
            raise self.error(f"No {self.kind} given; choose one or more of: {', '.join(self.names())}.")
        known = set(self.names())
        unknown = [n for n in names if n not in known]
        if unknown:
            raise self.error(self.unknown(unknown))
        return names

    def check_name(self, name: str) -> None:
        """Raise ``error`` if no entry is named ``name``, importing the built-in modules only when their names are
        not declared or they are loaded already (a check before the heavy libraries load: a command's arguments)."""
        if self._loaded or not self.declared:
            if name not in self:
                raise self.error(self.unknown([name]))
            return
        known = list(dict.fromkeys([*self.declared, *self._entries, *self._entry_points()]))
        if name not in known:
            raise self.error(self.unknown([name], known))

    def unknown(self, names: Sequence[Any], known: Sequence[str] | None = None) -> str:
        """The message for names that match no entry (``known``: every name, when already at hand)."""
        known = self.names() if known is None else list(known)
        similar = list(dict.fromkeys(m for n in names for m in close_matches(str(n), known)))
        hint = f" (did you mean {', '.join(map(repr, similar))}?)" if similar else ""
        plural = "s" if len(names) > 1 else ""
        choices = f"choose one of: {', '.join(known)}." if known else f"none is registered{self._install_hint()}."
        return (f"Unknown {self.kind}{plural} {', '.join(map(repr, names))}{hint}; {choices}"
                f"{' ' + self.hint if self.hint else ''}")

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self._load_builtins()
        return name in self._entries or name in self._entry_points()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={self.names()})"

    # --------------------------------------------------------------- loading
    def _load_builtins(self) -> None:
        if self._loaded or self._loading:
            return
        self._loading = True  # a built-in module looking itself up while it registers
        try:
            for module in self._builtins:
                importlib.import_module(module)
            self._loaded = True
        finally:
            self._loading = False

    def _entry_points(self) -> dict[str, EntryPoint]:
        if self._entry_point_cache is None:  # read once: the installed distributions' metadata
            self._entry_point_cache = {ep.name: ep for ep in entry_points(group=self.group)} if self.group else {}
        return self._entry_point_cache

    def _load(self, entry_point: EntryPoint) -> T:
        try:
            entry = entry_point.load()
        except (ImportError, AttributeError) as error:
            raise ToolSelectionError(f"{self.kind.capitalize()} {entry_point.name!r}: its entry point "
                                     f"{entry_point.value!r} (group {self.group!r}) does not load: {error}") from error
        if self._check is not None:
            try:
                self._check(entry)
            except TypeError as error:
                raise ToolSelectionError(f"{self.kind.capitalize()} {entry_point.name!r}: entry point "
                                         f"{entry_point.value!r} (group {self.group!r}): {error}") from None
        return entry

    def _install_hint(self) -> str:
        return (f" (install the project, pip install -e ., so that its entry points in {self.group!r} exist)"
                if self.group else "")


def format_listing(rows: Iterable[tuple[str, str]], *, indent: str = "") -> str:
    """Rows of a name and its summary as aligned lines, as every ``toolsel`` listing prints them."""
    rows = list(rows)
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join(f"{indent}{name:<{width}}  {text}".rstrip() for name, text in rows)


def _describe(entry: Any) -> str:
    """A class or function as ``Name (module)``; anything else as its repr."""
    if hasattr(entry, "__qualname__") and hasattr(entry, "__module__"):
        return f"{entry.__qualname__} ({entry.__module__})"
    return repr(entry)
