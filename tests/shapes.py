"""Problem shapes shared by every solver family's tests: small enough for a float64 CPU reference,
and covering odd sizes, N=1, groups, depthwise, dilation, stride 2, asymmetric filters, 3D."""

# name -> ProblemDescription.make keywords (direction, layout and dtype are added by the tests)
SHAPES = {
    "3x3_pad1": dict(n=2, c=16, k=24, in_size=(14, 14), filter_size=3, pads=1),
    "3x3_odd": dict(n=3, c=5, k=7, in_size=(13, 11), filter_size=3, pads=1),
    "n1_1x1": dict(n=1, c=32, k=16, in_size=(9, 9), filter_size=1),
    "stride2": dict(n=2, c=8, k=12, in_size=(15, 16), filter_size=3, pads=1, strides=2),
    "7x7_s2": dict(n=1, c=3, k=8, in_size=(23, 21), filter_size=7, pads=3, strides=2),
    "dilation2": dict(n=2, c=6, k=6, in_size=(12, 13), filter_size=3, pads=2, dilations=2),
    "groups2": dict(n=2, c=8, k=12, in_size=(10, 9), filter_size=3, pads=1, groups=2),
    "groups32": dict(n=2, c=64, k=64, in_size=(9, 10), filter_size=3, pads=1, groups=32),
    "depthwise": dict(n=2, c=16, k=16, in_size=(12, 12), filter_size=3, pads=1, groups=16),
    "1x7_asym": dict(n=2, c=8, k=8, in_size=(9, 17), filter_size=(1, 7), pads=(0, 3)),
    "7x1_asym": dict(n=1, c=8, k=4, in_size=(17, 9), filter_size=(7, 1), pads=(3, 0)),
    "3d_3x3x3": dict(n=1, c=4, k=6, in_size=(5, 7, 6), filter_size=3, pads=1),
    "3d_stride2": dict(n=2, c=3, k=4, in_size=(6, 9, 8), filter_size=(3, 3, 3), pads=(1, 0, 1), strides=2),
}

DTYPES = ("FP32", "FP16", "BF16")


def layouts_for(kw):
    nd = len(kw["in_size"])
    return ("NCDHW", "NDHWC") if nd == 3 else ("NCHW", "NHWC")


def _resnet50(n=2):
    """ResNet-50 v1.5's 23 unique convolutions (miofind.models) at batch ``n``, by name."""
    from miofind.models import model_layers

    out = {}
    for la in model_layers("resnet50"):
        hw, f, st = la.in_size[0], la.filter_size[0], la.strides[0]
        out[f"r50_{la.c}to{la.k}_{hw}_{f}x{f}s{st}"] = dict(n=n, c=la.c, k=la.k, in_size=la.in_size,
                                                          filter_size=la.filter_size, pads=la.pads, strides=la.strides)
    return out


RESNET50_SMALL_N = _resnet50()


# Real layers of networks other than ResNet (issue 19's non-ResNet benchmark set): name -> keywords at
# batch 1 (callers set n). Inception-v3's asymmetric 1x7/7x1 and 5x5 and its stride-2 reductions,
# VGG-16's 3x3 blocks, DenseNet-121's bottleneck 1x1 and growth 3x3. Too large for the float64 CPU
# reference: benchmarks and GPU checks only.
NON_RESNET = {
    "inc_128to128_17_1x7": dict(c=128, k=128, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)),
    "inc_128to192_17_7x1": dict(c=128, k=192, in_size=(17, 17), filter_size=(7, 1), pads=(3, 0)),
    "inc_192to192_17_1x7": dict(c=192, k=192, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)),
    "inc_48to64_35_5x5": dict(c=48, k=64, in_size=(35, 35), filter_size=5, pads=2),
    "inc_64to96_35_3x3": dict(c=64, k=96, in_size=(35, 35), filter_size=3, pads=1),
    "inc_288to384_35_3x3s2": dict(c=288, k=384, in_size=(35, 35), filter_size=3, strides=2),
    "inc_192to320_17_3x3s2": dict(c=192, k=320, in_size=(17, 17), filter_size=3, strides=2),
    "inc_448to384_8_3x3": dict(c=448, k=384, in_size=(8, 8), filter_size=3, pads=1),
    "vgg_64to128_112_3x3": dict(c=64, k=128, in_size=(112, 112), filter_size=3, pads=1),
    "vgg_256to256_56_3x3": dict(c=256, k=256, in_size=(56, 56), filter_size=3, pads=1),
    "vgg_512to512_28_3x3": dict(c=512, k=512, in_size=(28, 28), filter_size=3, pads=1),
    "vgg_512to512_14_3x3": dict(c=512, k=512, in_size=(14, 14), filter_size=3, pads=1),
    "dense_256to128_28_1x1": dict(c=256, k=128, in_size=(28, 28), filter_size=1),
    "dense_512to128_14_1x1": dict(c=512, k=128, in_size=(14, 14), filter_size=1),
    "dense_128to32_28_3x3": dict(c=128, k=32, in_size=(28, 28), filter_size=3, pads=1),
    "dense_128to32_7_3x3": dict(c=128, k=32, in_size=(7, 7), filter_size=3, pads=1),
}


def _padded_c():
    """Real layers whose input channels C are not a multiple of 64 (a 16-bit K tile of one tap): Inception-v3's and
    MobileNetV2's (miofind.models; groups 1, C and K multiples of 8: the Hopper forward's 16-bit cases, 1x1 and
    larger), and DenseNet-121's bottleneck 1x1 layers at C = 64 + 32 i, by name at batch 1 (callers set n)."""
    from miofind.models import model_layers

    out = {}
    for model, tag in (("inception_v3", "inc"), ("mobilenet_v2", "mb2")):
        for la in model_layers(model):
            if la.groups != 1 or la.c % 64 == 0 or la.c % 8 or la.k % 8:
                continue
            (fy, fx), st = la.filter_size, la.strides[0]
            out[f"{tag}_{la.c}to{la.k}_{la.in_size[0]}_{fy}x{fx}" + (f"s{st}" if st > 1 else "")] = dict(
                c=la.c, k=la.k, in_size=la.in_size, filter_size=la.filter_size, pads=la.pads, strides=la.strides)
    for c, hw in ((96, 56), (224, 56), (160, 28), (352, 28), (480, 28), (544, 14), (800, 14), (992, 7)):
        out[f"dense_{c}to128_{hw}_1x1"] = dict(c=c, k=128, in_size=(hw, hw), filter_size=1)
    return out


# the padded-K-tile benchmark set of the Hopper forward (bench/bench_kernel_time.py --set padded)
PADDED_C = _padded_c()
