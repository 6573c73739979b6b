"""The tool registry: the single source of truth for which tools exist and what they are called."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, overload

from tool_selection.errors import DuplicateToolError, ToolArgumentError, UnknownToolError
from tool_selection.tool import BaseTool
from tool_selection.tool_failures import tool_failure

__all__ = ["ToolRegistry", "default_registry", "register_tool"]

T = TypeVar("T", bound=type[BaseTool])


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class ToolRegistry:
    """A mapping of tool names to tool classes.

    There is one default registry (``default_registry()``) that ``@register_tool`` fills; isolated registries
    serve tests and external tool catalogs (see ``tool_selection.interop``).
    """

    def __init__(self, name: str = "registry", tools: Iterable[type[BaseTool]] = ()):
        self.name = name
        self._tools: dict[str, type[BaseTool]] = {}
        self._revision = object()
        for tool in tools:
            self.register(tool)

    def register(self, tool: T, *, replace: bool = False) -> T:
        if not (isinstance(tool, type) and issubclass(tool, BaseTool)):
            raise TypeError(f"Only BaseTool subclasses can be registered, got {tool!r}")
        if getattr(tool, "__abstract_tool__", False):
            raise TypeError(f"{_qualname(tool)} is abstract (defined with abstract=True) and cannot be registered")
        existing = self._tools.get(tool.NAME)
        if existing is not None and existing is not tool and not replace:
            if _qualname(existing) == _qualname(tool):
                # The same class re-executed (a module reloaded, a notebook cell run twice): keep the newer one.
                pass
            else:
                raise DuplicateToolError(tool.NAME, _qualname(existing), _qualname(tool), where=f"registry {self.name!r}")
        self._tools[tool.NAME] = tool
        self._revision = object()
        return tool

    def unregister(self, name: str) -> None:
        self.get(name)
        del self._tools[name]
        self._revision = object()

    @property
    def revision(self) -> object:
        """A token replaced whenever a tool is registered or unregistered: while ``registry.revision`` is the same
        object (``is``), the registry holds the same tools, so work done for it (an index) can be kept. A copy or
        an unpickled registry has a token of its own."""
        return self._revision

    def __copy__(self) -> ToolRegistry:  # its own mapping, so that registering in the copy leaves this one as it is
        return ToolRegistry(self.name, self._tools.values())

    def get(self, name: str) -> type[BaseTool]:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(name, self._tools, where=f"registry {self.name!r}") from None

    def create(self, name: str, **config: Any) -> BaseTool:
        """An instance of the named tool, configured with ``config``."""
        return self.get(name)(**config)

    def execute(self, name: str, arguments: dict[str, Any] | None = None, **config: Any) -> Any:
        """Validate ``arguments`` and run the named tool. Raises ``UnknownToolError`` or ``ToolArgumentError``."""
        return self.create(name, **config).validate_and_execute(**(arguments or {}))

    def try_execute(self, name: str, arguments: dict[str, Any] | None = None, **config: Any) -> dict[str, Any]:
        """Like ``execute`` but returns a structured ``{"ok": ..., ...}`` result instead of raising."""
        try:
            return {"ok": True, "result": self.execute(name, arguments, **config)}
        except UnknownToolError as error:
            return tool_failure("unknown_tool", str(error), suggestions=error.suggestions, tool=name)
        except ToolArgumentError as error:
            return {"ok": False, **error.to_dict(), "message": str(error)}

    def subset(self, names: Iterable[str], name: str | None = None) -> ToolRegistry:
        """An isolated registry holding only the named tools."""
        return ToolRegistry(name or f"{self.name}-subset", [self.get(n) for n in names])

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self) -> list[type[BaseTool]]:
        return [self._tools[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[type[BaseTool]]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.name!r}, {len(self)} tools)"


_DEFAULT = ToolRegistry("default")


def default_registry() -> ToolRegistry:
    """The process-wide registry that ``@register_tool`` writes to by default."""
    return _DEFAULT


@overload
def register_tool(tool: T, /) -> T: ...
@overload
def register_tool(*, registry: ToolRegistry | None = None, replace: bool = False) -> Callable[[T], T]: ...


def register_tool(tool: Any = None, /, *, registry: ToolRegistry | None = None, replace: bool = False) -> Any:
    """Register a tool class. Works bare (``@register_tool``) or with arguments
    (``@register_tool(registry=my_registry)``); returns the class unchanged."""

    def decorate(cls: T) -> T:
        return (_DEFAULT if registry is None else registry).register(cls, replace=replace)

    if tool is None:
        return decorate
    if not isinstance(tool, type):
        raise TypeError(
            f"register_tool expects a BaseTool subclass, got {tool!r}; "
            "use @register_tool or @register_tool(registry=...)"
        )
    return decorate(tool)
