"""Op templates by dtype family, for the random program generator.

A template is source with ``{a}`` (the tensor operated on), ``{b}`` (a second tensor),
``{s}`` (a scalar of the family) or ``{m}`` (a bool mask). Templates are chosen so most
are valid for the family; some deliberately are not for some dtypes of it (``div_``
on integers, ``abs_`` on complex, ``sigmoid_`` on bool): the builder runs every
candidate, drops what eager rejects, and keeps a few rejected lines on purpose (the
functionalized program must raise too).
"""

from __future__ import annotations

__all__ = [
    "BINARY",
    "FILLS",
    "INPLACE_BINARY",
    "INPLACE_SCALAR",
    "INPLACE_UNARY",
    "OUT_FORMS",
    "REDUCE",
    "SCALARS",
    "SMALL_RETURN",
    "UNARY",
]

SCALARS: dict[str, tuple[str, ...]] = {
    "float": ("0.5", "2.0", "-1.5", "0.25", "3.0", "-1.0"),
    "int": ("2", "-1", "3", "1"),
    "bool": ("True", "False"),
    "complex": ("(1+2j)", "0.5j", "-1.0", "(2-1j)"),
}

FILLS: dict[str, tuple[str, ...]] = {
    "float": ("0.0", "1.0", "-0.5", "2.5"),
    "int": ("0", "1", "-2", "7"),
    "bool": ("True", "False"),
    "complex": ("(1+1j)", "0.0", "-2j"),
}

UNARY: dict[str, tuple[str, ...]] = {
    "float": (
        "-{a}",
        "{a}.abs()",
        "torch.sigmoid({a})",
        "{a}.tanh()",
        "{a}.clamp(-1.0, 1.0)",
        "{a}.relu()",
        "torch.exp({a}.clamp(-2.0, 2.0))",
        "torch.floor({a} * 2)",
        "{a}.sign()",
        "{a}.logical_not()",
        "{a} > 0",
        "{a}.to(torch.float64)",
        "{a}.long()",
        "{a}.square()",
    ),
    "int": (
        "-{a}",
        "{a}.abs()",
        "{a} * 2",
        "{a} // 2",
        "{a} % 3",
        "{a}.clamp(-2, 2)",
        "~{a}",
        "{a}.float()",
        "{a} == 0",
        "{a}.sign()",
        "{a}.to(torch.int32)",
    ),
    "bool": ("~{a}", "{a}.logical_not()", "{a}.int()", "{a}.float()", "{a} ^ True"),
    "complex": (
        "-{a}",
        "{a}.conj_physical()",
        "{a} * 1j",
        "{a}.abs()",
        "{a}.sgn()",
        "{a}.real * 2",
        "{a}.to(torch.complex128)",
    ),
}

BINARY: dict[str, tuple[str, ...]] = {
    "float": (
        "{a} + {b}",
        "{a} - {b}",
        "{a} * {b}",
        "torch.maximum({a}, {b})",
        "torch.minimum({a}, {b})",
        "torch.where({a} > 0, {a}, {b})",
        "torch.add({a}, {b}, alpha=2)",
        "{a} / 2 + {b}",
    ),
    "int": (
        "{a} + {b}",
        "{a} - {b}",
        "{a} * {b}",
        "torch.maximum({a}, {b})",
        "{a} & {b}",
        "{a} | {b}",
        "torch.where({a} > 0, {a}, {b})",
    ),
    "bool": ("{a} & {b}", "{a} | {b}", "{a} ^ {b}", "torch.logical_and({a}, {b})", "{a} == {b}"),
    "complex": ("{a} + {b}", "{a} - {b}", "{a} * {b}", "torch.where({a}.real > 0, {a}, {b})"),
}

REDUCE: dict[str, tuple[str, ...]] = {
    "float": ("{a}.sum({d}, keepdim=True)", "{a}.sum({d})", "{a}.mean({d})", "{a}.amax({d})", "{a}.sum()"),
    "int": ("{a}.sum({d}, keepdim=True)", "{a}.sum({d})", "{a}.amax({d})", "{a}.sum()"),
    "bool": ("{a}.any({d})", "{a}.all({d}, keepdim=True)", "{a}.sum({d})"),
    "complex": ("{a}.sum({d}, keepdim=True)", "{a}.sum({d})", "{a}.mean({d})", "{a}.sum()"),
}

INPLACE_UNARY: dict[str, tuple[str, ...]] = {
    "float": (
        ".zero_()",
        ".fill_({f})",
        ".clamp_(-1.0, 1.0)",
        ".relu_()",
        ".sigmoid_()",
        ".neg_()",
        ".abs_()",
        ".floor_()",
        ".logical_not_()",
        ".sign_()",
        ".square_()",
    ),
    "int": (
        ".zero_()",
        ".fill_({f})",
        ".neg_()",
        ".abs_()",
        ".clamp_(-2, 2)",
        ".bitwise_not_()",
        ".logical_not_()",
    ),
    "bool": (".zero_()", ".fill_({f})", ".logical_not_()", ".bitwise_not_()", ".sigmoid_()"),
    "complex": (".zero_()", ".fill_({f})", ".neg_()", ".conj_physical_()", ".sgn_()", ".abs_()", ".mul_(1j)"),
}

INPLACE_SCALAR: dict[str, tuple[str, ...]] = {
    "float": (".add_({s})", ".mul_({s})", ".sub_({s})", ".div_(2)", ".remainder_(3)"),
    "int": (".add_({s})", ".mul_({s})", ".sub_({s})", ".floor_divide_(2)", ".div_(2)", ".bitwise_xor_(5)"),
    "bool": (".logical_and_({s})", ".bitwise_or_({s})", ".logical_xor_(True)"),
    "complex": (".add_({s})", ".mul_({s})", ".sub_({s})", ".div_(2)"),
}

INPLACE_BINARY: dict[str, tuple[str, ...]] = {
    "float": (
        ".add_({b})",
        ".add_({b}, alpha=0.5)",
        ".sub_({b})",
        ".mul_({b})",
        ".eq_({b})",
        ".lt_({b})",
        ".addcmul_({b}, {b}, value=0.5)",
        ".lerp_({b}, 0.5)",
        ".copy_({b})",
    ),
    "int": (
        ".add_({b})",
        ".sub_({b}, alpha=2)",
        ".mul_({b})",
        ".bitwise_or_({b})",
        ".ge_({b})",
        ".copy_({b})",
    ),
    "bool": (".logical_and_({b})", ".logical_or_({b})", ".bitwise_xor_({b})", ".copy_({b})", ".eq_({b})"),
    "complex": (".add_({b})", ".sub_({b})", ".mul_({b})", ".copy_({b})", ".add_({b}.conj())"),
}

#: ``out=`` forms: the result is written into ``{o}``, cast to its dtype and resized to fit.
OUT_FORMS: tuple[str, ...] = (
    "torch.add({a}, {b}, out={o})",
    "torch.mul({a}, 2, out={o})",
    "torch.neg({a}, out={o})",
    "torch.abs({a}, out={o})",
    "torch.sum({a}, 0, out={o})",
    "torch.mul({a}, {b}, out={o})",
    "torch.eq({a}, {b}, out={o})",
    "torch.sub({a}, {b}, out={o})",
)

#: Cheap reads used in return statements (``return x * 2, x + 1``).
SMALL_RETURN: dict[str, tuple[str, ...]] = {
    "float": ("{a} * 2", "{a} + 1", "{a}.clone()"),
    "int": ("{a} * 2", "{a} + 1", "{a}.clone()"),
    "bool": ("~{a}", "{a}.clone()", "{a} & {a}"),
    "complex": ("{a} * 2", "{a} + 1", "{a}.conj()"),
}
