"""The shims for older torch releases agree with what torch 2.13 says itself."""

from __future__ import annotations

import torch

from fxinplace._torch_compat import has_out_semantics, out_by_schema


def _aten_overloads() -> list[torch._ops.OpOverload]:
    ops = []
    for name in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = name.partition("::")
        if namespace != "aten":
            continue
        op_name, _, overload = rest.partition(".")
        packet = getattr(torch.ops.aten, op_name, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if isinstance(op, torch._ops.OpOverload):
            ops.append(op)
    return ops


def test_the_schema_rule_for_out_overloads_matches_torchs_out_tag() -> None:
    """torch 2.11 has no `out` tag (nor `torch._library.utils.is_out`); the schema rule
    stands in for it there, and must say what the tag says on every ATen overload."""
    ops = _aten_overloads()
    assert len(ops) > 2000
    disagree = [str(op) for op in ops if out_by_schema(op) != (torch.Tag.out in op.tags)]
    assert not disagree, disagree[:20]
    assert has_out_semantics(torch.ops.aten.add.out) and not has_out_semantics(torch.ops.aten.add_.Tensor)


def test_torchs_fake_tensor_cache_still_drops_as_strided_scatters_storage_offset() -> None:
    """A torch bug seed 104001 of the random pipelines met: a cache hit rebuilds a non-view
    result with offset 0, where as_strided_scatter keeps its input's. fxinplace.functionalize
    works around it (scatter_into_storage scatters a write into an input not at its storage's
    start into a compact copy). When this test fails, torch fixed it, and the workaround may go."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.arange(9.0)[1:-1]
    src = torch.zeros(2, 2, 1)
    assert torch.as_strided_scatter(x, src, (2, 2, 1), (3, 2, 2), 1).storage_offset() == 1
    with FakeTensorMode() as mode:
        fake, fake_src = mode.from_tensor(x), mode.from_tensor(src)
        first = torch.as_strided_scatter(fake, fake_src, (2, 2, 1), (3, 2, 2), 1)
        second = torch.as_strided_scatter(fake, fake_src, (2, 2, 1), (3, 2, 2), 1)
    assert first.storage_offset() == 1
    assert second.storage_offset() == 0
    # select_scatter too (seed 126434), which fxinplace.functionalize meets on any input not at
    # its storage's start: its traces dispatch without the cache (trace_values.py).
    assert torch.select_scatter(x.view(1, 7), torch.zeros(1), 1, 2).storage_offset() == 1
    with FakeTensorMode() as mode:
        fake, fake_src = mode.from_tensor(x).view(1, 7), mode.from_tensor(torch.zeros(1))
        first = torch.select_scatter(fake, fake_src, 1, 2)
        second = torch.select_scatter(fake, fake_src, 1, 2)
    assert (first.storage_offset(), second.storage_offset()) == (1, 0)


def test_torchs_math_bit_fallback_still_lays_an_inplace_squeeze_out_as_a_copy() -> None:
    """A torch bug seed 113284 of the random pipelines met: `squeeze_.dim` has no
    fallthrough for the conjugate and negative bits, so eager runs it on a resolved copy and
    gives the tensor that copy's strides, over its own storage. fxinplace.functionalize
    refuses such in-place views (`check_inplace_view_skips_math_bits`). When this test fails,
    torch fixed it, and the refusal may go."""
    for flip in (torch.conj, torch._neg_view):
        x = torch.arange(12.0).view(2, 2, 3).to(torch.complex64)
        t = flip(x).unfold(0, 2, 2).diagonal(0, 3, 1)
        assert t.stride() == (12, 1, 9)
        t.squeeze_(0)
        assert t.stride() == (2, 1)  # squeeze(0) would give (1, 9)


def test_eagers_complex_neg_into_a_strided_out_still_keeps_the_sign_of_zero() -> None:
    """Why the random pipelines' known issue for seeds 150113 and 149674 is not ours: complex neg
    of a contiguous operand gives +0.0 for a zero part into a fresh result (vectorized, 0 - x)
    and -0.0 into a strided out=. When this test fails, eager agrees with itself, and the known
    issue should go."""
    src = torch.zeros(4, 4, dtype=torch.complex64)
    out = torch.empty(8, 4, dtype=torch.complex64)[::2]
    torch.neg(src, out=out)
    assert not torch.neg(src)[0].real.signbit().any()  # a whole vector (the tail is scalar)
    assert out.real.signbit().all()


def test_eagers_nan_bit_pattern_from_remainder_still_depends_on_the_layout() -> None:
    """Why the random pipelines' known issue for seed 120031 is not ours: an integer tensor
    seen as floats holds NaNs, and eager's remainder_ returns another NaN bit pattern where its
    kernel is vectorized (a contiguous tensor) than where it is not (a strided one). A
    functional graph computes from compact copies, so its bits may differ from eager's. When
    this test fails, eager agrees with itself, and the known issue should go."""
    contiguous = torch.full((16, 3), -3, dtype=torch.int64)
    strided = contiguous.clone()
    contiguous.view(torch.float64).remainder_(3)
    strided[:, 1].view(torch.float64).remainder_(3)
    assert torch.equal(strided[:, 1], torch.full((16,), -3, dtype=torch.int64))
    assert not torch.equal(contiguous[:, 1], strided[:, 1])


def test_eagers_nan_bit_pattern_from_maximum_still_depends_on_the_layout() -> None:
    """Why the random pipelines' known issue for seed 144391 is not ours: eager's maximum keeps
    a NaN's bits in whole vectors (16 float32 of a contiguous tensor) and returns the canonical
    NaN in the scalar tail and on a strided tensor, so a functional graph computing from compact
    copies sees other bits. When this test fails, eager agrees with itself, and the known issue
    should go."""
    canonical = torch.tensor(float("nan")).view(torch.int32).item()
    contiguous = torch.full((20,), -1, dtype=torch.int32).view(torch.float32)
    strided = torch.full((20, 2), -1, dtype=torch.int32).view(torch.float32)[:, 0]
    bits_of = [torch.maximum(t, t).view(torch.int32) for t in (contiguous, strided)]
    assert torch.equal(bits_of[0][:16], torch.full((16,), -1, dtype=torch.int32))
    assert torch.equal(bits_of[1], torch.full((20,), canonical, dtype=torch.int32))
    assert torch.equal(torch._foreach_maximum([contiguous], [contiguous])[0].view(torch.int32), bits_of[0])


def test_eagers_nan_payload_from_a_reduction_still_depends_on_the_layout() -> None:
    """Why the random pipelines' known issue for seed 160033 is not ours: mean() over NaNs of
    two bit patterns keeps one walking a strided tensor and the other walking a contiguous
    copy. When this test fails, eager agrees with itself, and the known issue should go."""
    strided = torch.tensor([-2, 0, -1, 0, 3, 0, -2, 0, 1, 0, -1, 0, 0, 0, 4, 0], dtype=torch.int32)[::2]
    floats = strided.view(torch.float32)
    assert floats.mean(0).view(torch.int32).item() == -2
    assert floats.contiguous().mean(0).view(torch.int32).item() == -1


def test_eagers_nan_payload_from_remainder_still_depends_on_the_layout() -> None:
    """Why the random pipelines' known issue for seed 181790 is not ours: remainder of a NaN
    with bits -2 keeps them in eager's scalar loop (a strided tensor) and turns them into -3 in
    its vectorized kernel (a contiguous one). When this test fails, eager agrees with itself,
    and the known issue should go."""
    contiguous = torch.full((16,), -2, dtype=torch.int32).view(torch.float32)
    assert contiguous.remainder(3).view(torch.int32)[0].item() == -3
    strided = torch.full((16, 2), -2, dtype=torch.int32).view(torch.float32)
    strided[:, 0].remainder_(3)
    assert strided.view(torch.int32)[0, 0].item() == -2


def test_eagers_nan_payloads_from_complex_addition_still_depend_on_the_layout() -> None:
    """Why the random pipelines' known issue for seed 160418 is not ours: adding two complex
    NaNs, eager's vectorized kernel (contiguous) takes both parts' payloads from one operand,
    its scalar loop (strided) the real part's from one and the imaginary part's from the other.
    When this test fails, eager agrees with itself, and the known issue should go."""

    def complex_nans(payload: int) -> torch.Tensor:
        return torch.view_as_complex(torch.full((8, 2), payload, dtype=torch.int32).view(torch.float32))

    a, b = complex_nans(2145386496), complex_nans(2144337919)
    contiguous = torch.view_as_real(a + b).view(torch.int32)[0].tolist()
    strided = torch.view_as_real(
        torch.stack([a, a], 1).flatten()[::2] + torch.stack([b, b], 1).flatten()[::2]
    )
    assert contiguous == [2144337919, 2144337919]
    assert strided.view(torch.int32)[0].tolist() == [2144337919, 2145386496]


def test_torchs_symbolic_diagonal_of_an_empty_result_still_has_another_storage_offset() -> None:
    """A torch bug behind a known issue of the random pipelines (seeds 123035 and earlier):
    under a symbolic trace, diagonal() of an empty result reports another storage offset than
    eager's, so an out= argument resized from it, or as_strided at its storage_offset(), lands
    elsewhere. When this test fails, torch fixed it, and the known issue may go."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def offset(t):
        return torch.tensor(t[-1].unsqueeze(0).diagonal(-1).storage_offset())

    t = torch.arange(4.0).view(1, 4)
    assert offset(t).item() == 0
    assert make_fx(offset, tracing_mode="symbolic")(t)(t).item() == 4


def test_torchs_vectorized_complex_neg_still_drops_the_sign_of_zero() -> None:
    """Why the random pipelines' known issue for seed 127291 is not ours: complex neg gives
    +0.0 for 0.0 where the kernel is vectorized (eight contiguous complex64 elements) and -0.0
    where it is not (a strided tensor, or the tail). Seen through a dtype view, that sign is a
    bit of another value. When this test fails, eager agrees with itself, and the known issue
    should go."""
    contiguous = torch.view_as_real(torch.zeros(8, dtype=torch.complex64).neg())
    strided = torch.view_as_real(torch.zeros(16, dtype=torch.complex64)[::2].neg())
    assert not torch.signbit(contiguous).any()
    assert torch.signbit(strided).all()
