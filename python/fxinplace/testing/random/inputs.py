"""Random, shape-polymorphic inputs for generated programs: the source of ``make_args(n)``.

Every size is an expression in ``n`` (``n``, ``n + 1``, ``2 * n``) or a small constant
(0, 1, 2, 3), so a program can be traced symbolically at one ``n`` and run at another.
Inputs come in every layout a caller can hand a compiled function: contiguous,
transposed, sliced (strided, offset), channels_last, expanded (stride 0), 0-dim, with
zero-size and size-1 dims, of any of the covered dtypes, and inputs that alias an
earlier input: the same tensor twice, a slice of it, a dtype view of its bytes, a
transpose or a diagonal of it.

Values are exact in every dtype: floats are multiples of 1/8 in [-4, 4], integers in
[-4, 4], complex numbers have such parts.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

__all__ = ["DTYPES", "InputSpec", "dtype_family", "dtype_name", "random_inputs"]

#: The dtypes programs are drawn in, with their weights.
DTYPES: tuple[tuple[torch.dtype, float], ...] = (
    (torch.float32, 3.0),
    (torch.float64, 1.0),
    (torch.float16, 1.0),
    (torch.int64, 1.5),
    (torch.int32, 1.0),
    (torch.bool, 1.0),
    (torch.complex64, 1.5),
)

# Reinterpretations used for dtype-view aliases (and by random_views). Not bool <-> uint8:
# a write through the uint8 view can leave bytes that are not a valid bool.
DTYPE_VIEWS: dict[torch.dtype, tuple[torch.dtype, ...]] = {
    torch.float32: (torch.int32, torch.float16),
    torch.float64: (torch.int64, torch.float32, torch.complex64),
    torch.float16: (torch.int16,),
    torch.int64: (torch.float64, torch.int32),
    torch.int32: (torch.float32, torch.int16),
    torch.int16: (torch.float16,),
    torch.complex64: (torch.float64, torch.int64, torch.float32),
}

_SIZE_EXPRS: tuple[tuple[str, float], ...] = (
    ("n", 4.0),
    ("n + 1", 2.0),
    ("2 * n", 0.7),
    ("1", 2.0),
    ("2", 2.0),
    ("3", 1.5),
    ("0", 0.5),
)
_RANKS: tuple[tuple[int, float], ...] = ((0, 0.8), (1, 2.5), (2, 4.0), (3, 2.0), (4, 1.0))
_MAX_NUMEL = 320  # at the larger size


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_family(dtype: torch.dtype) -> str:
    """``"float"``, ``"int"``, ``"bool"`` or ``"complex"``: which ops make sense."""
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "int"


def _values(dtype: torch.dtype, shape: str) -> str:
    """Source of a fresh tensor of ``dtype`` with exact values (``g`` is the generator)."""
    real = f"torch.randn({shape}, generator=g).mul(8).round().div(8)"
    if dtype == torch.float32:
        return real
    if dtype.is_floating_point:
        return f"{real}.to(torch.{dtype_name(dtype)})"
    if dtype == torch.bool:
        return f"torch.randint(0, 2, {shape}, generator=g).bool()"
    if dtype.is_complex:
        return f"torch.complex({real}, {real})"
    return f"torch.randint(-4, 5, {shape}, generator=g, dtype=torch.{dtype_name(dtype)})"


def _tuple(sizes: Sequence[str]) -> str:
    if len(sizes) == 1:
        return f"({sizes[0]},)"
    return "(" + ", ".join(sizes) + ")"


@dataclass
class InputSpec:
    """The generated ``make_args`` and what each input is."""

    source: str
    names: list[str]
    features: set[str] = field(default_factory=set)
    aliased: bool = False


class _InputWriter:
    def __init__(self, rng: random.Random, seed: int, sizes: Sequence[int], main_dtype: torch.dtype) -> None:
        self.rng = rng
        self.seed = seed
        self.sizes = tuple(sizes)
        self.main_dtype = main_dtype
        self.lines: list[str] = []
        self.names: list[str] = []
        self.features: set[str] = set()
        self.aliased = False

    def _evaluate(self, lines: list[str], n: int) -> dict:
        ns: dict = {"torch": torch, "n": n, "g": torch.Generator().manual_seed(self.seed)}
        for line in lines:
            exec(line, ns)
        return ns

    def _accept(self, line: str, check: Callable[[torch.Tensor], bool] = lambda t: True) -> bool:
        """Keep ``line`` if it runs at every size and ``check`` holds for the new input."""
        name = line.split(" = ", 1)[0]
        try:
            for n in self.sizes:
                t = self._evaluate([*self.lines, line], n)[name]
                if not isinstance(t, torch.Tensor) or t.numel() > _MAX_NUMEL or not check(t):
                    return False
        except Exception:  # noqa: BLE001 - an invalid candidate is simply not used
            return False
        self.lines.append(line)
        self.names.append(name)
        return True

    def _shape(self, rank: int) -> list[str]:
        rng = self.rng
        exprs, weights = zip(*_SIZE_EXPRS, strict=True)
        while True:
            shape = list(rng.choices(exprs, weights, k=rank))
            # Mostly non-empty inputs; zero-size ones are a feature, not the norm.
            if shape.count("0") <= 1 and (shape.count("0") == 0 or rng.random() < 0.5):
                return shape

    def _fresh(self, name: str, dtype: torch.dtype) -> bool:
        rng = self.rng
        rank = rng.choices(*zip(*_RANKS, strict=True))[0]
        shape = self._shape(rank)
        layouts = ["contiguous"] * 6
        if rank >= 2:
            layouts += ["transposed"] * 2
        if rank >= 1:
            layouts += ["sliced"] * 2 + ["expanded"]
        if rank == 4:
            layouts += ["channels_last"] * 3
        layout = rng.choice(layouts)
        if layout == "transposed":
            i, j = sorted(rng.sample(range(rank), 2))
            made = list(shape)
            made[i], made[j] = made[j], made[i]
            suffix = ".t()" if rank == 2 else f".transpose({i}, {j})"
            expr = _values(dtype, _tuple(made)) + suffix
        elif layout == "sliced":
            d = rng.randrange(rank)
            made = list(shape)
            if rng.random() < 0.5:
                made[d] = f"2 * ({shape[d]})"
                index = "::2"
            else:
                made[d] = f"{shape[d]} + 2"
                index = "1:-1"
            prefix = "..., " if d == rank - 1 and d and rng.random() < 0.3 else ":, " * d
            expr = f"{_values(dtype, _tuple(made))}[{prefix}{index}]"
        elif layout == "expanded":
            if rng.random() < 0.5:
                made = ["1", *shape[1:]]
            else:
                made = list(shape)
                made[rng.randrange(rank)] = "1"
            expr = f"{_values(dtype, _tuple(made))}.expand{_tuple(shape)}"
        elif layout == "channels_last":
            expr = f"{_values(dtype, _tuple(shape))}.contiguous(memory_format=torch.channels_last)"
        else:
            expr = _values(dtype, _tuple(shape) if rank else "()")
        if not self._accept(f"{name} = {expr}"):
            return False
        self.features.add(f"input:{layout}")
        if rank == 0:
            self.features.add("input:0-dim")
        if "0" in shape:
            self.features.add("input:zero-size")
        if "1" in shape:
            self.features.add("input:size-1 dim")
        return True

    def _alias(self, name: str) -> bool:
        rng = self.rng
        of = rng.choice(self.names)
        kind = rng.choice(("same", "same", "slice", "slice", "dtype", "dtype", "transpose", "diagonal"))
        if kind == "same":
            expr = of
        elif kind == "slice":
            expr = f"{of}[{rng.choice(('1:', ':-1', '::2', '1:3', '..., 1:', ':, :2'))}]"
        elif kind == "dtype":
            probe = self._evaluate(self.lines, self.sizes[0])[of]
            targets = DTYPE_VIEWS.get(probe.dtype, ())
            if not targets:
                return False
            target = rng.choice(targets)
            if probe.dtype.is_complex and rng.random() < 0.3:
                expr = f"torch.view_as_real({of})"
            else:
                expr = f"{of}.view(torch.{dtype_name(target)})"
        elif kind == "transpose":
            expr = f"{of}.transpose(0, -1)"
        else:
            expr = f"{of}.diagonal()"
        if not self._accept(f"{name} = {expr}"):
            return False
        self.features.add(f"aliased input:{kind}")
        self.aliased = True
        return True

    def write(self, count: int) -> InputSpec:
        rng = self.rng
        for i in range(count):
            name = f"x{i}"
            done = False
            if i and rng.random() < 0.3:
                done = self._alias(name)
            for _ in range(20):
                if done:
                    break
                dtype = self.main_dtype
                if rng.random() < 0.2:
                    dtype = rng.choices(*zip(*DTYPES, strict=True))[0]
                done = self._fresh(name, dtype)
            if not done:
                self._accept(f"{name} = {_values(self.main_dtype, '(n,)')}")
        body = "".join(f"    {line}\n" for line in self.lines)
        ret = ", ".join(self.names) + ("," if len(self.names) == 1 else "")
        head = f"def make_args(n):\n    g = torch.Generator().manual_seed({self.seed})\n"
        source = f"{head}{body}    return ({ret})\n"
        return InputSpec(source, list(self.names), self.features, self.aliased)


def random_inputs(
    rng: random.Random, seed: int, sizes: Sequence[int], main_dtype: torch.dtype, count: int
) -> InputSpec:
    """``count`` inputs valid at every size in ``sizes`` (the source of ``make_args(n)``)."""
    return _InputWriter(rng, seed, sizes, main_dtype).write(count)
