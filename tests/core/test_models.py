"""Model layer lists (miofind.models): architecture facts, problem construction and validation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from miofind.models import MODELS, ConvLayer, model_layers, model_problems
from miofind.problem import ProblemDescription

TOTAL_CONVS = {"resnet50": 53, "resnet101": 104, "vgg16": 13, "mobilenet_v2": 52, "inception_v3": 94, "unet": 19}


# ResNet-50 v1.5 forward convolutions written out by hand: C, K, H (= W), filter, stride, pad, count.
RESNET50_V15 = [
    (3, 64, 224, 7, 2, 3, 1), (64, 64, 56, 1, 1, 0, 1), (64, 64, 56, 3, 1, 1, 3), (64, 256, 56, 1, 1, 0, 4),
    (256, 64, 56, 1, 1, 0, 2), (256, 128, 56, 1, 1, 0, 1), (128, 128, 56, 3, 2, 1, 1), (256, 512, 56, 1, 2, 0, 1),
    (128, 512, 28, 1, 1, 0, 4), (512, 128, 28, 1, 1, 0, 3), (128, 128, 28, 3, 1, 1, 3), (512, 256, 28, 1, 1, 0, 1),
    (256, 256, 28, 3, 2, 1, 1), (512, 1024, 28, 1, 2, 0, 1), (256, 1024, 14, 1, 1, 0, 6), (1024, 256, 14, 1, 1, 0, 5),
    (256, 256, 14, 3, 1, 1, 5), (1024, 512, 14, 1, 1, 0, 1), (512, 512, 14, 3, 2, 1, 1), (1024, 2048, 14, 1, 2, 0, 1),
    (512, 2048, 7, 1, 1, 0, 3), (2048, 512, 7, 1, 1, 0, 2), (512, 512, 7, 3, 1, 1, 2),
]


def test_models_tuple():
    assert MODELS == ("resnet50", "resnet101", "vgg16", "mobilenet_v2", "inception_v3", "unet")


def test_resnet50_matches_written_out_list():
    ref = {(c, k, h, f, s, p): n for c, k, h, f, s, p, n in RESNET50_V15}
    got = {}
    for layer in model_layers("resnet50"):
        (h, w), (r, q), (sh, sw), (ph, pw) = layer.in_size, layer.filter_size, layer.strides, layer.pads
        assert h == w and r == q and sh == sw and ph == pw and layer.groups == 1
        got[(layer.c, layer.k, h, r, sh, ph)] = layer.count
    assert got == ref
    assert len(model_layers("resnet50")) == len(RESNET50_V15)


@pytest.mark.parametrize("model", MODELS)
def test_total_convs(model):
    layers = model_layers(model)
    assert sum(layer.count for layer in layers) == TOTAL_CONVS[model]
    assert len(set(layers)) == len(layers)
    assert len({replace(la, count=1) for la in layers}) == len(layers)
    assert all(isinstance(la, ConvLayer) and la.count >= 1 for la in layers)


def test_resnet_downsample_and_depth():
    r50 = model_layers("resnet50")
    shapes = {(la.c, la.k, la.in_size, la.filter_size, la.strides) for la in r50}
    for c, k, h in ((256, 512, 56), (512, 1024, 28), (1024, 2048, 14)):  # strided 1x1 shortcuts
        assert (c, k, (h, h), (1, 1), (2, 2)) in shapes
    r101 = {(la.c, la.k, la.in_size, la.filter_size): la.count for la in model_layers("resnet101")}
    assert r101[(256, 256, (14, 14), (3, 3))] == 22  # 23 blocks in stage 3, the first strided from 28
    assert r101[(1024, 256, (14, 14), (1, 1))] == 22


def test_vgg16_all_3x3():
    layers = model_layers("vgg16")
    assert all(la.filter_size == (3, 3) and la.pads == (1, 1) and la.strides == (1, 1) for la in layers)
    assert layers[0] == ConvLayer(3, 64, (224, 224), (3, 3), (1, 1), (1, 1))
    assert layers[-1] == ConvLayer(512, 512, (14, 14), (3, 3), (1, 1), (1, 1), count=3)


def test_mobilenet_depthwise():
    layers = model_layers("mobilenet_v2")
    dw = [la for la in layers if la.groups > 1]
    assert dw
    assert all(la.groups == la.c == la.k and la.filter_size == (3, 3) and la.pads == (1, 1) for la in dw)
    assert sum(la.count for la in dw) == 17  # one per inverted residual block
    assert layers[0] == ConvLayer(3, 32, (224, 224), (3, 3), (2, 2), (1, 1))
    assert layers[-1] == ConvLayer(320, 1280, (7, 7), (1, 1), (1, 1), (0, 0))


def test_inception_v3_grids():
    layers = model_layers("inception_v3")
    assert layers[0] == ConvLayer(3, 32, (299, 299), (3, 3), (2, 2), (0, 0))
    sizes = {la.in_size for la in layers}
    assert {(35, 35), (17, 17), (8, 8)} <= sizes
    assert ConvLayer(128, 128, (17, 17), (1, 7), (1, 1), (0, 3)) in [
        ConvLayer(la.c, la.k, la.in_size, la.filter_size, la.strides, la.pads) for la in layers]
    asym = [la for la in layers if la.filter_size[0] != la.filter_size[1]]
    assert all(la.pads == ((la.filter_size[0] - 1) // 2, (la.filter_size[1] - 1) // 2) for la in asym)


def test_unet_shapes():
    layers = model_layers("unet")
    assert layers[0] == ConvLayer(3, 64, (256, 256), (3, 3), (1, 1), (1, 1))
    assert ConvLayer(1024 + 512, 512, (32, 32), (3, 3), (1, 1), (1, 1)) in layers
    assert layers[-1] == ConvLayer(64, 2, (256, 256), (1, 1), (1, 1), (0, 0))


@pytest.mark.parametrize("alias,model", [("ResNet-50", "resnet50"), ("mobilenetv2", "mobilenet_v2"),
                                         ("Inception-V3", "inception_v3"), ("VGG16", "vgg16"), ("U-Net", "unet")])
def test_aliases(alias, model):
    assert model_layers(alias) == model_layers(model)


@pytest.mark.parametrize("bad", ["resnet18", "", None])
def test_unknown_model(bad):
    with pytest.raises(ValueError) as e:
        model_layers(bad)
    assert "model" in str(e.value) and repr(bad) in str(e.value) and "resnet50" in str(e.value)
    with pytest.raises(ValueError, match="model"):
        model_problems(bad)


@pytest.mark.parametrize("model", MODELS)
def test_problems_round_trip_and_dedup(model):
    probs = model_problems(model, batch=8, dtypes=("FP32", "FP16"), layouts=("NCHW", "NHWC"))
    keys = [p.key() for p in probs]
    assert len(keys) == len(set(keys)) == len(model_layers(model)) * 2 * 2 * 3
    for p in probs:
        assert ProblemDescription.from_key(p.key()) == p
        assert p.n == 8


def test_tf32_problems_are_the_fp32_ones_with_tf32_math():
    fp32 = model_problems("resnet50", batch=4, dtypes=("FP32", "FP16"))
    tf32 = model_problems("resnet50", batch=4, dtypes=("FP32", "FP16"), tf32=True)
    assert len(tf32) == len(fp32)
    for a, b in zip(fp32, tf32):
        if a.dtype == "FP32":
            assert b.math == "tf32" and b.key() == a.key() + "_tf32" and replace(b, math="strict") == a
        else:   # 16-bit problems have no TF32 variant
            assert b == a
        assert ProblemDescription.from_key(b.key()) == b


def test_problem_order_and_fields():
    layer = model_layers("vgg16")[0]
    probs = model_problems("vgg16", batch=4, dtypes=("FP16", "BF16"), layouts=("NHWC",), directions="WF")
    assert [(p.dtype, p.layout, p.direction) for p in probs[:4]] == [
        ("FP16", "NHWC", "W"), ("FP16", "NHWC", "F"), ("BF16", "NHWC", "W"), ("BF16", "NHWC", "F")]
    p = probs[0]
    assert (p.c, p.k, p.in_size, p.filter_size, p.pads, p.strides, p.groups) == (
        layer.c, layer.k, layer.in_size, layer.filter_size, layer.pads, layer.strides, layer.groups)


def test_dedup_keeps_first():
    once = model_problems("resnet50", directions="F")
    twice = model_problems("resnet50", directions="FF", dtypes=("FP32", "FP32"))
    assert once == twice
    assert len(once) == len(model_layers("resnet50"))
    groups = model_problems("mobilenet_v2", directions="F")
    assert any(p.groups > 1 for p in groups)


@pytest.mark.parametrize("kwargs,field", [
    ({"batch": 0}, "batch"), ({"batch": True}, "batch"), ({"batch": 2.0}, "batch"),
    ({"dtypes": ("FP64",)}, "dtypes"), ({"dtypes": ()}, "dtypes"),
    ({"layouts": ("NCDHW",)}, "layouts"), ({"layouts": ("CHWN",)}, "layouts"),
    ({"directions": "FX"}, "directions"), ({"directions": ""}, "directions"),
])
def test_validation(kwargs, field):
    with pytest.raises(ValueError) as e:
        model_problems("vgg16", **kwargs)
    value = next(iter(kwargs.values()))
    assert field in str(e.value) and repr(value) in str(e.value)
