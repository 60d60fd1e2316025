"""Every place ``src/adjudge`` names an error code, read from its syntax tree.

A code is named where the source writes it as a string in one of these places:

- a ``code=`` argument, or a positional argument bound to a parameter named ``code`` of an
  error class or a function of ``src/adjudge`` (``Error("…", code="X")``, ``_bad_input("X", …)``);
- the default of a parameter named ``code``, or a class attribute ``code = "X"``;
- a ``"code": "X"`` entry of a dict written out (an error body built by hand);
- a comparison with an attribute named ``code`` (``exc.code == "X"``, ``error.code in (…)``).

A code given as a name is read through what the name is bound to: a string the function or the
module assigns (a table's ``.get(…, "X")`` is each of its strings), or a parameter of the
enclosing function, which then *forwards* the code: the sites are its callers'. A code given as
``exc.code`` re-words a refusal caught by an ``except``: it is a :class:`Rewrap`, and the class it
is re-raised as must be of the caught one's kind. Only strings that look like codes count
(``A_CODE``), so a CLI exit status passed as ``code=2`` is not one. Each site names the error
class built there, when one is: the class called, or the class a forwarding helper builds.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import adjudge
from adjudge.errors import Error

ROOT = Path(adjudge.__file__).parent
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
#: Modules read but not imported: alembic's environment runs only under alembic, and an entry
#: point (``__main__``) runs the CLI when imported.
_UNIMPORTED = ("adjudge.store.migrations.env",)

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Site:
    """One place a code is named: where, the code, and the error class built there (if any)."""

    where: str
    code: str
    raiser: type[Error] | None = None


@dataclass(frozen=True)
class Rewrap:
    """A caught refusal re-raised with its own code (``Cls(…, code=exc.code)``)."""

    where: str
    caught: tuple[type[Error], ...]
    raiser: type[Error]


@dataclass(frozen=True)
class Unreadable:
    """A code argument whose value this reader cannot resolve to strings."""

    where: str
    source: str


@dataclass(frozen=True)
class Reading:
    """What :func:`read` found."""

    sites: list[Site]
    rewraps: list[Rewrap]
    unreadable: list[Unreadable]


@dataclass(frozen=True)
class _Module:
    name: str
    path: Path
    tree: ast.Module
    module: ModuleType | None


@dataclass(frozen=True)
class _Scope:
    """Where a node stands: its module, the function around it, the names bound to constants
    there, and the exceptions the ``except`` clauses around it bind."""

    module: _Module
    function: Function | None = None
    constants: dict[str, object] = field(default_factory=dict)
    caught: dict[str, tuple[type[Error], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Forward:
    """A code that is the enclosing function's own parameter."""


@dataclass(frozen=True)
class _Reworded:
    """A code that is a caught refusal's (``exc.code``)."""

    caught: tuple[type[Error], ...]


_Value = str | _Forward | _Reworded


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> list[_Module]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        name = _module_name(path)
        skip = name in _UNIMPORTED or name.endswith("__main__")
        module = None if skip else importlib.import_module(name)
        found.append(_Module(name, path, ast.parse(path.read_text(encoding="utf-8")), module))
    return found


def _constants(body: list[ast.stmt]) -> dict[str, object]:
    """The names a block binds to constants (at any depth, not in nested functions or classes)."""
    found: dict[str, object] = {}
    for node in _statements(body):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                pairs = (
                    zip(target.elts, node.value.elts, strict=False)
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    else [(target, node.value)]
                )
                for name, value in pairs:
                    if isinstance(name, ast.Name):
                        try:
                            found[name.id] = ast.literal_eval(value)
                        except ValueError:
                            continue
    return found


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, Function | ast.ClassDef):
            continue
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))


def _assigned(function: Function, name: str) -> list[ast.expr]:
    """The expressions a function assigns to a local name."""
    return [
        node.value
        for node in _statements(function.body)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
    ]


def _params(node: Function) -> list[str]:
    return [a.arg for a in (*node.args.posonlyargs, *node.args.args)]


def _methods(modules: list[_Module]) -> dict[str, list[list[str]]]:
    """Each method name of the source → the positional parameters (``self`` left out) of each
    definition of that name that takes a ``code``."""
    found: dict[str, list[list[str]]] = {}
    for module in modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, Function) and not item.name.startswith("__"):
                        params = _params(item)[1:]
                        if "code" in params:
                            found.setdefault(item.name, []).append(params)
    return found


def _resolve(obj: object, dotted: str) -> object:
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _error_class(scope: _Scope, node: ast.expr) -> type[Error] | None:
    """The error class an expression names, read from the imported module."""
    obj = _resolve(scope.module.module, ast.unparse(node))
    return obj if isinstance(obj, type) and issubclass(obj, Error) else None


class _Reader:
    """One pass over the source: sites, re-wordings, forwarding helpers, unreadable codes."""

    def __init__(self) -> None:
        self.modules = _modules()
        self.methods = _methods(self.modules)
        self.sites: list[Site] = []
        self.rewraps: list[Rewrap] = []
        self.unreadable: list[Unreadable] = []
        #: helper → the error classes it builds with the ``code`` it is given
        self.forwards: dict[str, set[type[Error]]] = {}
        #: helper → the helpers it hands its own ``code`` on to
        self.links: dict[str, set[str]] = {}
        #: (helper, code, where) of the codes handed to helpers, settled after the pass
        self.handed: list[tuple[str, str, str]] = []

    def read(self) -> Reading:
        for module in self.modules:
            scope = _Scope(module, constants=_constants(module.tree.body))
            self._walk(module.tree, scope)
        for helper, code, where in self.handed:
            raisers = self._raisers(helper, frozenset())
            for raiser in raisers or {None}:
                self.sites.append(Site(where, code, raiser))
        return Reading(self.sites, self.rewraps, self.unreadable)

    # --- the walk -------------------------------------------------------------------------

    def _walk(self, node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, Function):
                self._defaults(child, scope)
                constants = {**scope.constants, **_constants(child.body)}
                inner = _Scope(scope.module, child, constants)
            elif isinstance(child, ast.ExceptHandler) and child.name and child.type is not None:
                types = child.type.elts if isinstance(child.type, ast.Tuple) else [child.type]
                caught = tuple(c for c in (_error_class(scope, t) for t in types) if c)
                inner = _Scope(
                    scope.module,
                    scope.function,
                    scope.constants,
                    {**scope.caught, child.name: caught},
                )
            elif isinstance(child, ast.ClassDef):
                self._class(child, scope)
            elif isinstance(child, ast.Call):
                self._call(child, scope)
            elif isinstance(child, ast.Dict):
                self._dict(child, scope)
            elif isinstance(child, ast.Compare):
                self._compare(child, scope)
            self._walk(child, inner)

    def _where(self, scope: _Scope, node: ast.AST) -> str:
        return f"{scope.module.path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', 0)}"

    def _add(self, scope: _Scope, node: ast.AST, code: str, raiser: type[Error] | None) -> None:
        if CODE.match(code):
            self.sites.append(Site(self._where(scope, node), code, raiser))

    def _defaults(self, node: Function, scope: _Scope) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        named = [a.arg for a in positional[len(positional) - len(args.defaults) :]]
        defaults = dict(zip(named, args.defaults, strict=True))
        defaults |= {
            a.arg: d
            for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
            if d is not None
        }
        value = defaults.get("code")
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and CODE.match(value.value)
        ):
            self.handed.append((node.name, value.value, self._where(scope, node)))

    def _class(self, node: ast.ClassDef, scope: _Scope) -> None:
        raiser = _error_class(scope, ast.Name(node.name))
        for item in node.body:
            targets = (
                item.targets
                if isinstance(item, ast.Assign)
                else [item.target]
                if isinstance(item, ast.AnnAssign)
                else []
            )
            value = getattr(item, "value", None)
            if any(isinstance(t, ast.Name) and t.id == "code" for t in targets) and (
                isinstance(value, ast.Constant) and isinstance(value.value, str)
            ):
                self._add(scope, item, value.value, raiser)

    def _call(self, node: ast.Call, scope: _Scope) -> None:
        raiser = _error_class(scope, node.func)
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        arguments = list(self._code_arguments(node, scope))
        if raiser is not None and not arguments:
            self._add(scope, node, raiser.code, raiser)  # the class's own code
        for argument in arguments:
            values = self._values(argument, scope, frozenset())
            if values is None:
                self.unreadable.append(Unreadable(self._where(scope, node), ast.unparse(argument)))
                continue
            for value in values:
                if isinstance(value, str):
                    if raiser is not None:
                        self._add(scope, node, value, raiser)
                    elif CODE.match(value):
                        self.handed.append((name, value, self._where(scope, node)))
                elif isinstance(value, _Forward) and scope.function is not None:
                    if raiser is not None:
                        self.forwards.setdefault(scope.function.name, set()).add(raiser)
                    else:
                        self.links.setdefault(scope.function.name, set()).add(name)
                elif isinstance(value, _Reworded) and raiser is not None:
                    self.rewraps.append(Rewrap(self._where(scope, node), value.caught, raiser))

    def _code_arguments(self, node: ast.Call, scope: _Scope) -> Iterator[ast.expr]:
        """The arguments of a call that are its ``code``: by keyword, or by position (read from
        the callee's signature when the name is the module's, from every definition of a
        method of that name otherwise; a local variable's call binds none)."""
        for keyword in node.keywords:
            if keyword.arg == "code":
                yield keyword.value
        if any(isinstance(a, ast.Starred) for a in node.args):
            return
        positions: list[int] = []
        if isinstance(node.func, ast.Name):
            obj = getattr(scope.module.module, node.func.id, None)
            # A record whose ``code`` is not an error's (a kernel rail's, say) binds none.
            if callable(obj) and not (isinstance(obj, type) and not issubclass(obj, Error)):
                try:
                    params = inspect.signature(obj).parameters.values()
                except (TypeError, ValueError):
                    params = []  # type: ignore[assignment]
                positional = [
                    p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                ]
                positions = [positional.index("code")] if "code" in positional else []
        elif isinstance(node.func, ast.Attribute):
            positions = [params.index("code") for params in self.methods.get(node.func.attr, [])]
        for index in positions:
            if index < len(node.args):
                yield node.args[index]

    def _values(self, node: ast.expr, scope: _Scope, seen: frozenset[str]) -> list[_Value] | None:
        """What a code argument can be: codes, a forwarded parameter, a caught refusal's code;
        None when it cannot be read. A constant that is not a string is no code at all."""
        function = scope.function
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else []
        if isinstance(node, ast.Name):
            if function is not None and node.id in {
                *_params(function),
                *(a.arg for a in function.args.kwonlyargs),
            }:
                return [_Forward()]
            if node.id in scope.constants:
                value = scope.constants[node.id]
                return [value] if isinstance(value, str) else []
            if function is not None and node.id not in seen and _assigned(function, node.id):
                found: list[_Value] = []
                for expr in _assigned(function, node.id):
                    values = self._values(expr, scope, seen | {node.id})
                    if values is None:
                        return None
                    found += values
                return found
            if node.id in vars(scope.module.module or object):
                value = getattr(scope.module.module, node.id)  # a constant imported by name
                return [value] if isinstance(value, str) else []
            return None
        if isinstance(node, ast.Attribute) and node.attr == "code":
            return [self._reworded(node.value, scope)]
        if isinstance(node, ast.BoolOp):
            return self._all([*node.values], scope, seen)
        if isinstance(node, ast.IfExp):
            return self._all([node.body, node.orelse], scope, seen)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "str" and len(node.args) == 1:
                return self._values(node.args[0], scope, seen)
            if node.func.id == "getattr" and len(node.args) == 3:
                code = node.args[1]
                if isinstance(code, ast.Constant) and code.value == "code":
                    rest = self._values(node.args[2], scope, seen)
                    return None if rest is None else [self._reworded(node.args[0], scope), *rest]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and isinstance(scope.constants.get(node.func.value.id), dict)
        ):
            table = scope.constants[node.func.value.id]
            assert isinstance(table, dict)
            rest = self._all(node.args[1:], scope, seen)
            return None if rest is None else [str(v) for v in table.values()] + rest
        return None

    def _all(
        self, nodes: list[ast.expr], scope: _Scope, seen: frozenset[str]
    ) -> list[_Value] | None:
        found: list[_Value] = []
        for node in nodes:
            values = self._values(node, scope, seen)
            if values is None:
                return None
            found += values
        return found

    def _reworded(self, node: ast.expr, scope: _Scope) -> _Reworded:
        return _Reworded(scope.caught.get(node.id, ()) if isinstance(node, ast.Name) else ())

    def _dict(self, node: ast.Dict, scope: _Scope) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if (
                isinstance(key, ast.Constant)
                and key.value == "code"
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                self._add(scope, value, value.value, None)

    def _compare(self, node: ast.Compare, scope: _Scope) -> None:
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "code" for s in sides):
            return
        for side in sides:
            items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            for item in items:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    self._add(scope, item, item.value, None)

    def _raisers(self, helper: str, seen: frozenset[str]) -> set[type[Error]]:
        """The error classes a helper's ``code`` ends up in, through the helpers it calls."""
        found = set(self.forwards.get(helper, set()))
        for callee in self.links.get(helper, set()) - seen:
            found |= self._raisers(callee, seen | {helper})
        return found


def read() -> Reading:
    """Every site naming a code in ``src/adjudge``, every re-worded refusal, and every code
    argument that cannot be read."""
    return _Reader().read()
