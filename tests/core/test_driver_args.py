"""MIOpenDriver's convolution command line into problems."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings

from miofind.driver_args import parse_driver_args, problems_from_driver_args
from miofind.problem import ProblemDescription as P

from strategies import driver_argv, driver_problems


def one(argv):
    (p,) = problems_from_driver_args(argv)
    return p


PERF_MODEL_LINE = (
    "MIOpenDriver convfp16 --batchsize 32 --spatial_dim 2 --pad_h 1 --pad_w 1 --pad_d 0 --conv_stride_h 1 "
    "--conv_stride_w 1 --conv_stride_d 0 --dilation_h 1 --dilation_w 1 --dilation_d 0 --in_channels 64 --in_h 56 "
    "--in_w 56 --in_d 1 --fil_h 3 --fil_w 3 --fil_d 1 --out_channels 64 --group_count 1 --in_layout NCHW "
    "--fil_layout NCHW --out_layout NCHW --forw 1"
)


# -- the command word and the argv forms ----------------------------------------------------------

def test_defaults():
    ps = problems_from_driver_args(["conv"])
    assert [p.direction for p in ps] == ["F", "B", "W"]  # -F 0: all three
    p = ps[0]
    assert (p.n, p.c, p.k, p.in_size, p.filter_size) == (100, 3, 32, (32, 32), (3, 3))
    assert (p.pads, p.strides, p.dilations, p.groups, p.bias) == ((0, 0), (1, 1), (1, 1), 1, 0)
    assert p.layouts == ("NCHW",) * 3 and p.dtypes == ("FP32",) * 3 and p.math == "strict"
    assert not p.transposed and p.cast_types == (None, None, None)
    assert p.key() == "3-32-32-3x3-32-30-30-100-0x0-1x1-1x1-0-NCHW-FP32-F"
    assert {q.with_direction("F") for q in ps} == {p}


def test_defaults_of_unused_flags():
    o = parse_driver_args("conv")
    assert o.command == "conv" and o.given == set()
    assert o["iter"] == 10 and o["verify"] == 1 and o["search"] == 0 and o["solution"] == "-1"
    assert o["in_layout"] == "" and o["mode"] == "conv" and o["pad_mode"] == "default"
    o = parse_driver_args("conv -i 5 -t 1 -V 0 -s 1 -S ConvDirectNaiveConvFwd -C /tmp/cache")
    assert o["iter"] == 5 and o["time"] == 1 and o["verify"] == 0 and o["search"] == 1
    assert o["solution"] == "ConvDirectNaiveConvFwd" and o["verification_cache"] == "/tmp/cache"
    assert o.given == {"iter", "time", "verify", "search", "solution", "verification_cache"}


@pytest.mark.parametrize("command,dtypes", [
    ("conv", ("FP32",) * 3),
    ("convfp16", ("FP16",) * 3),
    ("convbfp16", ("BF16",) * 3),
    ("convint8", ("INT8", "INT8", "INT32")),
    ("convfp8", ("FP8",) * 3),
])
def test_command_word_sets_types(command, dtypes):
    p = one(f"{command} -F 1 -n 2 -c 4 -k 4 -H 8 -W 8")
    assert p.dtypes == dtypes


def test_convint8_key():
    p = one("convint8 -F 1 -n 2 -c 4 -k 8 -H 8 -W 8 -p 1 -q 1")
    assert p.key() == "4-8-8-3x3-8-8-8-2-1x1-1x1-1x1-0-NCHW-INT8INT8INT32-F"


@pytest.mark.parametrize("lead", [[], ["MIOpenDriver"], ["./bin/MIOpenDriver"], ["/opt/rocm/bin/MIOpenDriver"]])
def test_leading_driver_word(lead):
    p = one(lead + ["conv", "-F", "1", "-n", "4"])
    assert p.n == 4


def test_string_and_list_argv_agree():
    line = "MIOpenDriver conv -n 8 -c 16 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1"
    assert problems_from_driver_args(line) == problems_from_driver_args(shlex.split(line))


def test_short_long_and_equals_forms_agree():
    short = one("conv -n 8 -c 16 -H 14 -W 12 -k 32 -y 5 -x 3 -p 2 -q 1 -u 2 -v 1 -l 1 -j 2 -g 2 -b 1 -F 1")
    long = one("conv --batchsize 8 --in_channels 16 --in_h 14 --in_w 12 --out_channels 32 --fil_h 5 --fil_w 3 "
               "--pad_h 2 --pad_w 1 --conv_stride_h 2 --conv_stride_w 1 --dilation_h 1 --dilation_w 2 "
               "--group_count 2 --bias 1 --forw 1")
    eq = one("conv --batchsize=8 --in_channels=16 --in_h=14 --in_w=12 --out_channels=32 --fil_h=5 --fil_w=3 "
             "--pad_h=2 --pad_w=1 --conv_stride_h=2 --conv_stride_w=1 --dilation_h=1 --dilation_w=2 "
             "--group_count=2 --bias=1 --forw=1")
    assert short == long == eq
    assert (short.n, short.c, short.k, short.in_size, short.filter_size) == (8, 16, 32, (14, 12), (5, 3))
    assert (short.pads, short.strides, short.dilations, short.groups, short.bias) == ((2, 1), (2, 1), (1, 2), 2, 1)


def test_last_flag_wins():
    assert one("conv -F 1 -n 4 --batchsize 9").n == 9


def test_negative_values_are_taken_as_values():
    assert parse_driver_args("conv -S -1")["solution"] == "-1"


# -- -F: the direction bitmask --------------------------------------------------------------------

@pytest.mark.parametrize("mask,dirs", [
    (0, "FBW"), (1, "F"), (2, "B"), (3, "FB"), (4, "W"), (5, "FW"), (6, "BW"), (7, "FBW"),
])
def test_forw_bitmask(mask, dirs):
    ps = problems_from_driver_args(f"conv -F {mask} -n 2")
    assert "".join(p.direction for p in ps) == dirs
    assert len({p.with_direction("F") for p in ps}) == 1


# -- the perf-model line (2D with 3D-only flags at 0) ---------------------------------------------

def test_perf_model_line_with_zero_3d_flags():
    p = one(PERF_MODEL_LINE)
    assert p.spatial_dims == 2
    assert (p.n, p.c, p.k, p.in_size, p.filter_size, p.pads) == (32, 64, 64, (56, 56), (3, 3), (1, 1))
    assert p.dtypes == ("FP16",) * 3 and p.direction == "F"
    assert p.key() == "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP16-F"


@pytest.mark.parametrize("flags", [
    "--conv_stride_d 0", "--dilation_d 0", "--pad_d -1", "--in_d 0", "--fil_d 0", "--trans_output_pad_d 5",
    "--fil_d 99", "--dilation_d -3",
])
def test_unused_depth_flags_are_ignored_in_2d(flags):
    assert one(f"conv -F 1 -n 2 {flags}") == one("conv -F 1 -n 2")


@pytest.mark.parametrize("flags,match", [
    ("--spatial_dim 3 --conv_stride_d 0", r"--conv_stride_d=0"),
    ("--spatial_dim 3 --dilation_d 0", r"--dilation_d=0"),
    ("--spatial_dim 3 --pad_d -1", r"--pad_d=-1"),
    ("--spatial_dim 3 --in_d 0", r"--in_d=0"),
    ("--conv_stride_h 0", r"--conv_stride_h=0"),
    ("--dilation_w 0", r"--dilation_w=0"),
    ("--pad_w -2", r"--pad_w=-2"),
    ("--fil_h 0", r"--fil_h=0"),
])
def test_used_dims_are_checked(flags, match):
    with pytest.raises(ValueError, match=match):
        problems_from_driver_args(f"conv -F 1 -n 2 {flags}")


# -- 3D -------------------------------------------------------------------------------------------

def test_3d():
    p = one("conv --spatial_dim 3 -n 4 -c 8 -k 16 --in_d 9 -H 12 -W 14 --fil_d 3 -y 3 -x 1 --pad_d 1 -p 1 -q 0 "
            "--conv_stride_d 2 -u 1 -v 2 --dilation_d 1 -l 2 -j 1 -F 4")
    assert p.spatial_dims == 3 and p.direction == "W"
    assert p.in_size == (9, 12, 14) and p.filter_size == (3, 3, 1)
    assert p.pads == (1, 1, 0) and p.strides == (2, 1, 2) and p.dilations == (1, 2, 1)
    assert p.layouts == ("NCDHW",) * 3
    assert p.out_size == (5, 10, 7)
    assert p.key() == "16-5-10-7-3x3x1-8-9-12-14-4-1x1x0-2x1x2-1x2x1-0-NCDHW-FP32-W"


def test_3d_short_flags():
    assert one("conv -_ 3 -! 9 -@ 3 -$ 1 -# 2 -^ 1 -F 1") == one(
        "conv --spatial_dim 3 --in_d 9 --fil_d 3 --pad_d 1 --conv_stride_d 2 --dilation_d 1 -F 1")


def test_3d_channels_last():
    p = one("conv --spatial_dim 3 --in_layout NDHWC --fil_layout NDHWC --out_layout NDHWC -F 1 -n 1")
    assert p.layouts == ("NDHWC",) * 3
    assert "-NDHWC-NDHWC-NDHWC-" in p.key()


# -- layouts --------------------------------------------------------------------------------------

def test_layouts():
    p = one("conv -I NHWC -O NHWC -f NHWC -F 1 -n 2")
    assert p.layouts == ("NHWC",) * 3
    assert p.x_shape == (2, 32, 32, 3) and p.w_shape == (32, 3, 3, 3) and p.y_shape == (2, 30, 30, 32)
    assert p.key() == "3-32-32-3x3-32-30-30-2-0x0-1x1-1x1-0-NHWC-NHWC-NHWC-FP32-F"


def test_layouts_default_independently():
    """MIOpenDriver defaults each unspecified layout to NCHW (NCDHW in 3D), not to the in-layout."""
    p = one("conv -I NHWC -F 1 -n 2")
    assert p.layouts == ("NHWC", "NCHW", "NCHW")
    assert "-NHWC-NCHW-NCHW-" in p.key()
    b = one("conv -I NHWC -F 2 -n 2")
    assert "-NCHW-NCHW-NHWC-" in b.key()  # (dy, w, dx)


@pytest.mark.parametrize("flags,match", [
    ("-I NCDHW", r"--in_layout='NCDHW'"),
    ("-f XYZW", r"--fil_layout='XYZW'"),
    ("-O nhwc", r"--out_layout='nhwc'"),
    ("--spatial_dim 3 -I NHWC", r"--in_layout='NHWC'.*--spatial_dim 3"),
    ("-I NCHWc", r"--in_layout='NCHWc'"),
])
def test_bad_layouts(flags, match):
    with pytest.raises(ValueError, match=match):
        problems_from_driver_args(f"conv -F 1 {flags}")


# -- transposed -----------------------------------------------------------------------------------

def test_trans_mode_with_output_padding():
    p = one("conv -m trans -n 16 -c 64 -k 32 -H 28 -W 28 -p 1 -q 1 -u 2 -v 2 --trans_output_pad_h 1 "
            "--trans_output_pad_w 0 -F 1")
    assert p.transposed and p.output_padding == (1, 0)
    assert p.out_size == (56, 55)
    assert p.w_shape == (64, 32, 3, 3)  # C x K/G x filter, as MIOpenDriver builds it
    assert p.key() == "64-28-28-3x3-32-56-55-16-1x1-2x2-1x1-0-NCHW-FP32-B_trans"
    assert P.from_key(p.key()) == p
    assert one("conv -m trans -n 16 -c 64 -k 32 -H 28 -W 28 -p 1 -q 1 -u 2 -v 2 -Y 1 -X 0 -F 1") == p


def test_output_padding_ignored_in_conv_mode():
    assert one("conv -F 1 --trans_output_pad_h 3") == one("conv -F 1")


def test_trans_output_pad_checked():
    with pytest.raises(ValueError, match=r"--trans_output_pad_h=2.*--conv_stride_h=2"):
        problems_from_driver_args("conv -m trans -u 2 -v 2 --trans_output_pad_h 2 -F 1")
    with pytest.raises(ValueError, match=r"--trans_output_pad_w=-1"):
        problems_from_driver_args("conv -m trans --trans_output_pad_w -1 -F 1")


def test_trans_3d():
    p = one("conv -m trans --spatial_dim 3 --in_d 4 --fil_d 2 --conv_stride_d 2 --trans_output_pad_d 1 -F 1 -n 1")
    assert p.transposed and p.output_padding == (1, 0, 0)
    assert p.out_size == ((4 - 1) * 2 + 2 + 1, 34, 34)


# -- pad modes ------------------------------------------------------------------------------------

def _same_pad(i, f, s):
    return max(f - (s if i % s == 0 else i % s), 0) // 2


@pytest.mark.parametrize("i,f,s", [(32, 3, 1), (32, 3, 2), (33, 3, 2), (224, 7, 2), (17, 7, 1), (10, 1, 3),
                                   (7, 5, 3), (8, 4, 4), (5, 2, 1)])
def test_pad_mode_same(i, f, s):
    p = one(f"conv -z same -H {i} -W {i} -y {f} -x {f} -u {s} -v {s} -p 9 -q 9 -F 1")
    pad = _same_pad(i, f, s)
    assert p.pads == (pad, pad)


def test_pad_mode_same_examples():
    assert one("conv -z same -H 224 -W 224 -y 7 -x 7 -u 2 -v 2 -F 1").pads == (2, 2)  # 7-2=5 -> 2 (MIOpen floors)
    assert one("conv -z same -H 56 -W 56 -y 3 -x 3 -F 1").pads == (1, 1)
    assert one("conv -z same -H 56 -W 57 -y 3 -x 3 -u 2 -v 2 -F 1").pads == (0, 1)  # 3-2=1 -> 0; 3-1=2 -> 1


def test_pad_mode_valid():
    assert one("conv -z valid -p 3 -q 2 -F 1").pads == (0, 0)


def test_pad_mode_default_keeps_pads():
    assert one("conv -z default -p 3 -q 2 -F 1").pads == (3, 2)


def test_pad_mode_only_with_unit_dilation_or_1x1():
    # dilation 2 with a 3x3 filter: MIOpenDriver leaves the given pads
    assert one("conv -z same -l 2 -j 2 -p 2 -q 2 -F 1").pads == (2, 2)
    assert one("conv -z valid -l 2 -j 1 -p 2 -q 2 -F 1").pads == (2, 2)
    # 1x1 filters: applied whatever the dilation
    assert one("conv -z valid -l 2 -j 2 -y 1 -x 1 -p 2 -q 2 -F 1").pads == (0, 0)
    # trans mode: never applied
    assert one("conv -m trans -z valid -p 1 -q 1 -F 1").pads == (1, 1)


def test_pad_mode_3d():
    p = one("conv --spatial_dim 3 -z same --in_d 9 --fil_d 5 --conv_stride_d 2 -F 1")
    assert p.pads == (_same_pad(9, 5, 2), 1, 1)


# -- groups, bias, casts, tf32 --------------------------------------------------------------------

def test_groups():
    p = one("conv -c 64 -k 128 -g 32 -F 1 -n 2")
    assert p.groups == 32 and p.w_shape == (128, 2, 3, 3)
    assert p.key().endswith("-F_g32")


@pytest.mark.parametrize("g", ["0", "-3"])
def test_group_count_below_one_is_refused(g):
    """MIOpenDriver quietly runs -g 0 and -g -3 as one group; miofind names the flag instead."""
    with pytest.raises(ValueError, match=rf"^driver flag --group_count={g}: must be at least 1$"):
        problems_from_driver_args(f"conv -g {g} -F 1")


@pytest.mark.parametrize("flags", ["-c 64 -k 96 -g 64", "-c 6 -k 32 -g 4", "-c 3 -k 32 -g 32", "-c 4 -k 2 -g 4"])
def test_groups_must_divide_channels(flags):
    with pytest.raises(ValueError, match=r"--group_count=\d+: must divide in_channels=\d+ and out_channels=\d+"):
        problems_from_driver_args(f"conv {flags} -F 1")


def test_bias_flag():
    assert one("conv -b 1 -F 1").bias == 1
    assert one("conv -b 0 -F 1").bias == 0
    for b in ("5", "-1", "2"):  # not quietly bias=1
        with pytest.raises(ValueError, match=rf"^driver flag --bias={b}: expected 0 or 1$"):
            problems_from_driver_args(f"conv -b {b} -F 1")


def test_cast_types():
    f = one("convfp16 --in_cast_type fp8 --wei_cast_type bf8 -F 1")
    assert f.cast_types == ("FP8", "BF8", None)
    assert f.key().endswith("-FP16-F_ciFP8_cwBF8")
    # B: in is dy and out is dx, so the x cast is written as _co
    b = one("convfp16 -U fp8 -R bf8 -F 2")
    assert b.cast_types == ("FP8", "BF8", None)
    assert b.key().endswith("-FP16-B_cwBF8_coFP8")
    assert P.from_key(b.key()) == b
    assert one("convfp16 -T fp8 -F 1").cast_types == (None, None, "FP8")
    assert one("conv --in_cast_type -1 -F 1").cast_types == (None, None, None)


def test_bad_cast_type():
    with pytest.raises(ValueError, match=r"--in_cast_type='fp7'"):
        problems_from_driver_args("conv --in_cast_type fp7 -F 1")


def test_activation_flag():
    """miofind's own --activation: a fused forward problem (with -b 1, bias + activation); the B and W
    problems of the same line are the plain ones; a transposed line is refused."""
    p = one("convfp16 -n 2 -c 8 -k 16 -H 8 -W 8 -b 1 --activation relu -F 1 --in_layout NHWC --fil_layout NHWC "
            "--out_layout NHWC")
    assert p.bias == 1 and p.activation == "relu" and p.key().endswith("-F_relu")
    ps = problems_from_driver_args("conv -n 2 -c 8 -k 16 -H 8 -W 8 --activation gelu -F 0")
    assert [(q.direction, q.activation) for q in ps] == [("F", "gelu"), ("B", "none"), ("W", "none")]
    with pytest.raises(ValueError, match=r"--activation='swish': expected one of none, relu, gelu"):
        one("conv --activation swish -F 1")
    with pytest.raises(ValueError, match=r"--activation=relu: a fused activation needs --mode conv"):
        one("conv --activation relu -m trans -F 1")


def test_tf32_flag():
    p = one("conv --tf32 1 -F 1")
    assert p.math == "tf32" and p.key().endswith("_tf32")
    with pytest.raises(ValueError, match=r"math='tf32'"):
        problems_from_driver_args("convfp16 --tf32 1 -F 1")


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,match", [
    ("", r"expected a command word"),
    ("MIOpenDriver", r"expected a command word"),
    ("gemm -n 3", r"command='gemm'"),
    ("Conv -n 3", r"command='Conv'"),
    ("convfp32 -n 3", r"command='convfp32'"),
    ("conv --batch 3", r"--batch: unknown"),
    ("conv --nonsense=3", r"--nonsense: unknown"),
    ("conv -Q 3", r"-Q: unknown"),
    ("conv -n", r"--batchsize: missing its value"),
    ("conv --in_h", r"--in_h: missing its value"),
    ("conv -n abc", r"--batchsize='abc': expected an integer"),
    ("conv -H 3.5", r"--in_h='3.5': expected an integer"),
    ("conv --in_w=", r"--in_w='': expected an integer"),
    ("conv -k 1_0", r"--out_channels='1_0': expected an integer"),
    ("conv -k 0x10", r"--out_channels='0x10': expected an integer"),
    ("conv 32", r"unexpected value '32'"),
    ("conv -n 2 7", r"unexpected value '7'"),
    ("conv -F 8", r"--forw=8: expected a bitmask 0..7"),
    ("conv -F -1", r"--forw=-1: expected a bitmask"),
    ("conv -F x", r"--forw='x': expected an integer"),
    ("conv -m deconv", r"--mode='deconv': expected conv or trans"),
    ("conv -z full", r"--pad_mode='full': expected default, same or valid"),
    ("conv --spatial_dim 1", r"--spatial_dim=1: expected 2 or 3"),
    ("conv --spatial_dim 4", r"--spatial_dim=4"),
    ("conv -n 0", r"--batchsize=0: must be at least 1"),
    ("conv -c -3", r"--in_channels=-3: must be at least 1"),
    ("conv -k 0", r"--out_channels=0: must be at least 1"),
    ("conv -H 0", r"--in_h=0: must be at least 1"),
    ("conv -x 0", r"--fil_w=0: must be at least 1"),
    ("conv -u 0", r"--conv_stride_h=0: must be at least 1"),
    ("conv -l 0", r"--dilation_h=0: must be at least 1"),
    ("conv -p -1", r"--pad_h=-1: must not be negative"),
    ("conv -c 6 -k 8 -g 4", r"--group_count=4: must divide in_channels=6"),
    ("conv -H 2 -W 2 -y 5 -x 5", r"filter_size=\(5, 5\): dilated filter 5 is larger than the padded input"),
    ("conv -z valid -H 2 -W 2 -p 1 -q 1", r"filter_size=\(3, 3\)"),
])
def test_errors_name_the_flag_and_value(argv, match):
    with pytest.raises(ValueError, match=match):
        problems_from_driver_args(argv)


# -- property: any problem MIOpenDriver can express comes back from its argv -----------------------

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(driver_problems())
def test_driver_argv_round_trip(p):
    argv = driver_argv(p)
    assert one(argv) == p
    assert one(shlex.join(argv)) == p
    eq = [argv[0], argv[1]] + [f"{a}={b}" for a, b in zip(argv[2::2], argv[3::2])]
    assert one(eq) == p


# -- hostile lines (issue 15): one-line ValueErrors naming the flag -----------------------------------

@pytest.mark.parametrize("line,match", [
    ("conv -n " + "1" + "0" * 5000, r"^driver flag --batchsize='10000.*' \(5003 characters\): must be below 2\^63"),
    ("conv -c 9223372036854775808", r"^driver flag --in_channels='9223372036854775808': must be below 2\^63"),
    ("conv -H -" + "9" * 30, r"^driver flag --in_h='-9+': must be below 2\^63"),
    ("conv -n '3", r"^driver args \"conv -n '3\": no closing quotation"),
    ('conv -n "3', r"^driver args 'conv -n \"3': no closing quotation"),
    ("conv -n 3\\", r"^driver args 'conv -n 3\\\\': no escaped character"),
    ("conv -n ３", r"^driver flag --batchsize='３': expected an integer$"),
    ("conv -n 3.0", r"^driver flag --batchsize='3.0': expected an integer$"),
    ("conv --" + "x" * 100 + " 3", r"^driver flag --'x+\.\.\.x+' \(102 characters\): unknown"),
    ("conv " + "-n 3 " * 4000, r"longer than 16384 characters"),
])
def test_hostile_lines_name_the_flag(line, match):
    """Python's "Exceeds the limit (4300 digits)" and shlex's bare "No closing quotation" named nothing."""
    with pytest.raises(ValueError, match=match) as ei:
        problems_from_driver_args(line)
    msg = str(ei.value)
    assert "\n" not in msg and len(msg) < 1000 and "Exceeds the limit" not in msg


@pytest.mark.parametrize("argv,match", [
    (["conv", "-n", 3], r"^driver args: item 2=3 is not a string$"),
    (["conv", "-n", "3\0"], r"^driver args: item 2='3\\x00' contains a NUL character$"),
    (b"conv -n 3", r"^driver args=b'conv -n 3': expected a command line string or a list of strings$"),
    (None, r"^driver args=None"),
    (["conv", "-n", "3" * 20000], r"longer than 16384 characters"),
])
def test_argv_of_wrong_types(argv, match):
    with pytest.raises(ValueError, match=match):
        problems_from_driver_args(argv)


def test_the_largest_64_bit_value_is_read():
    assert one("conv -n 9223372036854775807 -F 1").n == 2**63 - 1
    assert one("conv -n +0032 -F 1").n == 32  # a sign and leading zeros, as MIOpenDriver's atoi reads them
