"""In-place ops on inputs and views of inputs (the graph writes the inputs back), and programs
mutating inputs and intermediates together."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a34_r4, a44, ar, r44, r44_r44


@functionalize_case(a44, "input_mutation")
def input_add_(x):
    x.add_(1)
    return x * 2


@functionalize_case(a44, "input_mutation")
def input_row_fill(x):
    x[0].fill_(0.0)
    return x.sum()


@functionalize_case(a34, "input_mutation")
def input_transposed_view_mul(x):
    x.t()[1].mul_(3)
    return x + 0


@functionalize_case(r44_r44, "input_mutation")
def input_two_inputs_mutated(x, y):
    x.add_(y)
    y.mul_(2)
    return x + y


@functionalize_case(a44, "input_mutation", "output_aliases_input")
def input_view_chain_zero_returned(x):
    v = x.view(-1)[2:6]
    v.zero_()
    return v


@functionalize_case(lambda: (ar(3, 4).t(),), "input_mutation")
def input_noncontiguous_mutated(x):
    x.add_(1)
    x[0].mul_(2)
    return x.sum(0)


@functionalize_case(a34_r4, "input_mutation")
def input_mutated_only_one_read(x, y):
    x[1:].sub_(y)
    return y.sum()


@functionalize_case(a44, "input_mutation")
def input_mutation_no_tensor_output(x):
    x.diagonal().fill_(1.0)
    return x.shape[0]


@functionalize_case(a44, "input_mutation")
def input_two_overlapping_views_written(x):
    x.view(-1)[0:6].add_(1)
    x[1].mul_(2)
    return x.clone()


@functionalize_case(a44, "input_mutation")
def input_mutation_then_read_via_old_view(x):
    v = x[:, 0]
    x.mul_(2)
    return v + 1


@functionalize_case(
    lambda: (ar(2, 3),),
    "input_mutation",
    "inplace_view_op",
    stock_fails=("mutations_and_views",),
    stock_fails_reason=(
        "torch.func.functionalize with remove='mutations_and_views' writes the transposed input back "
        "into its storage in the new order ([1, 4, 1, 4, 2, 5] where eager leaves [1, 1, 2, 4, 4, 5]): "
        "the input reads right, the tensor it shares memory with does not"
    ),
)
def input_metadata_t_(x):
    x.t_()
    x[0].add_(1)
    return x * 1


@functionalize_case(lambda: (ar(4), ar(3)), "input_mutation", "inplace_view_op")
def input_metadata_unsqueeze_(x, y):
    x.unsqueeze_(0)
    y.add_(1)
    x[0, 1:].mul_(2)
    return x + 1


@functionalize_case(lambda: (ar(4),), "input_mutation", "resize")
def input_resize_grow(x):
    x.resize_(6)
    x[4:].fill_(1.0)
    return x * 1


@functionalize_case(r44_r44, "mixed")
def mixed_input_and_intermediate(x, y):
    a = x * 2
    a[0].add_(y[0])
    x[1].copy_(a[0])
    y.mul_(a.sum())
    return a


@functionalize_case(a34_r4, "mixed")
def mixed_intermediate_from_input_view(x, y):
    v = x[1:]
    a = v.clone()
    a.add_(y)
    v.sub_(a)
    return a, v


@functionalize_case(r44, "mixed")
def mixed_write_input_via_intermediate_chain(x):
    a = x.t().contiguous()
    a[0].fill_(9.0)
    x.copy_(a)
    return x.view(-1)[:5]
