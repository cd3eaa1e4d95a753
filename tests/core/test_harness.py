"""The harness's run planning (slow candidates get fewer timed runs, never fewer than three) and its choice of float64 reference."""

import sys
import types

import pytest

from miofind.harness import CUT_AFTER_RUNS, CUT_AFTER_WARMUPS, MIN_TIMED_RUNS, TIMED_FIRST_GROUP, Harness, plan_runs
from miofind.problem import ProblemDescription


def test_fast_kernel_keeps_requested_runs():
    assert plan_runs(1.0, 3, 10, 250.0) == (3, 10)
    assert plan_runs(19.0, 3, 10, 250.0) == (3, 10)  # 13 runs x 19 ms fit in 250 ms


def test_slow_kernel_gets_one_warmup_and_what_fits():
    assert plan_runs(20.0, 3, 10, 250.0) == (1, 10)  # 13 x 20 ms is over; 1 + 10 runs fit
    warm, iters = plan_runs(50.0, 3, 10, 250.0)
    assert (warm, iters) == (1, 4)  # 1 + 4 runs of 50 ms = 250 ms
    assert (warm + iters) * 50.0 <= 250.0


def test_very_slow_kernel_keeps_three_timed_runs():
    assert plan_runs(2000.0, 3, 10, 250.0) == (1, MIN_TIMED_RUNS)


def test_fewer_requested_than_minimum_is_respected():
    assert plan_runs(2000.0, 3, 1, 250.0) == (1, 1)


def test_zero_estimate_keeps_requested_runs():
    assert plan_runs(0.0, 3, 10, 250.0) == (3, 10)


# -- Harness.measure's control flow, with CUDA events faked (the GPU tests run the real ones) -----

@pytest.fixture
def fake_gpu(monkeypatch):
    """A fake cupy whose launches take ``durations`` in order (the last repeated): an event records how many launches
    came before it, and the time between two events is that of the launches between them."""
    clock = types.SimpleNamespace(durations=[], launches=0)

    class Event:
        at = 0

        def record(self):
            self.at = clock.launches

        def synchronize(self):
            pass

    def elapsed(start, stop):
        return sum(clock.durations[min(i, len(clock.durations) - 1)] for i in range(start.at, stop.at))

    cuda = types.SimpleNamespace(Event=Event, get_elapsed_time=elapsed,
                                 get_current_stream=lambda: types.SimpleNamespace(ptr=0))
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr("miofind.verify.poison", lambda a, dt: None)
    monkeypatch.setenv("MIOFIND_FIND_TIMING", "wall")    # the hold's kernel needs a GPU (test_timing_gpu.py runs it)
    h = object.__new__(Harness)
    h.problem = ProblemDescription.from_key("64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F")
    h.verify, h.a, h.b, h.out, h.ref, h.check_ms = False, None, None, None, None, float("nan")

    def invoker(a, b, out, ws, stream):
        clock.launches += 1
    return h, invoker, clock


def test_measure_fast_kernel_runs_all_requested(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [2.0] * 14
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0)
    assert clock.launches == 1 + 2 + 10 and m.time_ms == 2.0   # the verification run is the first warm-up


def test_measure_slow_kernel_gets_fewer_runs(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [100.0, 100.0, 90.0, 110.0, 100.0]
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0)
    assert clock.launches == 1 + 1 + 3  # check, one timed warm-up, three timed runs
    assert (m.time_ms, m.q20_ms, m.q80_ms) == (100.0, 90.0, 110.0)


def test_measure_kernel_over_budget_is_recorded_from_its_verification_run(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [1000.0]
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0)
    assert clock.launches == 1
    assert (m.time_ms, m.q20_ms, m.q80_ms) == (1000.0, 1000.0, 1000.0)


def test_measure_without_budget_always_runs_all_requested(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [1000.0] * 14
    h.measure(inv, None, "direct", 3, 10)
    assert clock.launches == 13


def test_failure_stage_names_verify_and_launch():
    from miofind.harness import VerifyError, failure_stage

    assert failure_stage(VerifyError("relative error 0.5 exceeds 1e-05")) == ("verify", "relative error 0.5 exceeds 1e-05")
    stage, why = failure_stage(RuntimeError(" out of resources " + "x" * 3000))
    assert stage == "launch" and why.startswith("RuntimeError: out of resources") and len(why) == len("RuntimeError: ") + 2000


# -- early stop (find's cut) --------------------------------------------------------------------------

def test_measure_cuts_a_clearly_slower_kernel_in_its_warmups(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [10.0] * 14        # check (the first warm-up), then a second timed warm-up: cut
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    assert clock.launches == CUT_AFTER_WARMUPS == 2 and m.cut and m.runs == 2
    assert (m.time_ms, m.q20_ms, m.q80_ms) == (10.0, 10.0, 10.0)
    assert m.verify_ms >= 0.0 and m.timing_ms >= 0.0


def test_measure_cuts_after_its_first_timed_set_when_a_warmup_was_under_the_cut(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [10.0, 8.0, 10.0] + [10.0] * 11    # check, warm-ups (one under the cut), timed runs
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    # the first set of timed runs, back to back: all over the cut
    assert clock.launches == 1 + 2 + TIMED_FIRST_GROUP and m.cut and m.runs == TIMED_FIRST_GROUP >= CUT_AFTER_RUNS


def test_a_slow_first_run_cannot_cut_a_kernel(fake_gpu):
    """The verification run counts as a warm-up, but one-time work (a module load) in it cannot cut:
    the fastest warm-up decides, and a slow first run does not shorten the budget's plan."""
    h, inv, clock = fake_gpu
    clock.durations = [60.0] + [1.0] * 13
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    assert not m.cut and m.runs == 10 and m.time_ms == 1.0 and clock.launches == 13


def test_measure_verifies_after_timing_and_never_a_cut_kernel(fake_gpu):
    h, inv, clock = fake_gpu
    h.verify = True
    seen = []

    def verify_output(family):
        seen.append(clock.launches)
        return 0.0
    h.verify_output = verify_output
    clock.durations = [10.0] * 14
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    assert m.cut and m.max_error is None and seen == []
    clock.launches = 0
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=20.0)
    assert not m.cut and m.max_error == 0.0 and seen == [13]     # the output of the last of 13 runs
    clock.launches, clock.durations = 0, [1000.0]
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    assert m.runs == 1 and m.max_error == 0.0 and seen == [13, 1]    # over budget: its one run, verified


def test_measure_does_not_cut_when_one_of_the_first_runs_is_under_the_cut(fake_gpu):
    h, inv, clock = fake_gpu
    clock.durations = [10.0, 8.0, 10.0] + [10.0, 8.0, 10.0] + [10.0] * 7
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, cut_ms=9.0)
    assert clock.launches == 13 and not m.cut and m.runs == 10 and m.time_ms == 10.0


def test_measure_cuts_later_once_the_fastest_run_is_over_the_cut(fake_gpu):
    """A run under the cut among the warm-ups and the first timed set keeps the kernel timed; at a lower cut it is
    cut after its warm-ups (the two after the verification run, made as one set)."""
    h, inv, clock = fake_gpu
    clock.durations = [10.0, 8.0, 10.0] + [8.0] + [10.0] * 9
    m = h.measure(inv, None, "direct", 3, 10, cut_ms=9.0)
    assert not m.cut and clock.launches == 13
    clock.launches = 0
    m = h.measure(inv, None, "direct", 3, 10, cut_ms=7.0)
    assert m.cut and m.runs == 3 and clock.launches == 3


def test_timed_runs_never_cuts_without_a_cut_or_with_too_few_runs(fake_gpu):
    from miofind.harness import timed_runs

    h, inv, clock = fake_gpu
    clock.durations = [10.0] * 20
    t = timed_runs(lambda: inv(None, None, None, None, None), 0, 3, cut_ms=1.0)
    assert not t.cut and t.runs == 3          # three runs were asked for: all made, nothing cut short
    t = timed_runs(lambda: inv(None, None, None, None, None), 0, 10)
    assert not t.cut and t.runs == 10


def test_settle_ends_timing_once_the_runs_agree(fake_gpu):
    """With ``settle``, timing ends after SETTLE_AFTER_RUNS timed runs that lie within the spread of
    their median (not a cut: the kernel is verified and kept); runs that disagree keep it timed to the
    end; without ``settle`` (``miofind tune``) every run is made."""
    from miofind.harness import SETTLE_AFTER_RUNS, SETTLE_SPREAD

    h, inv, clock = fake_gpu
    clock.durations = [1.0, 1.0, 1.0] + [1.0, 1.01, 0.99, 1.0, 1.01] + [5.0] * 5
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, settle=SETTLE_SPREAD)
    assert not m.cut and m.runs == SETTLE_AFTER_RUNS == 5 and clock.launches == 3 + 5 and m.time_ms == 1.0
    clock.launches = 0
    clock.durations = [1.0, 1.0, 1.0] + [1.0, 1.2, 0.9, 1.0, 1.1] + [1.0] * 5
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0, settle=SETTLE_SPREAD)
    assert not m.cut and m.runs == 10 and clock.launches == 13
    clock.launches = 0
    clock.durations = [1.0] * 13
    m = h.measure(inv, None, "direct", 3, 10, budget_ms=250.0)
    assert m.runs == 10 and clock.launches == 13


def test_a_disturbed_set_of_runs_is_timed_again_and_the_lower_median_kept(fake_gpu, caplog):
    """A full set whose 80% quantile is over UNSTABLE_SPREAD x its 20% one (most runs slowed by something else
    on the GPU or host, as 7 shipped records were: medians of 10-26 ms against q20s of 0.02-5 ms) is timed once
    more; the set of lower median is kept, marked ``retimed``. A steady set, a settled one and a cut one are not."""
    from miofind.harness import UNSTABLE_SPREAD, Timing, timed_runs, unstable

    h, inv, clock = fake_gpu
    run = lambda: inv(None, None, None, None, None)  # noqa: E731
    clock.durations = [0.02, 0.02, 20.0, 20.0, 20.0, 21.0, 20.0, 0.02, 20.0, 20.0] + [0.02] * 10
    with caplog.at_level("INFO", logger="miofind.harness"):
        t = timed_runs(run, 0, 10)
    assert t.retimed and t.runs == 10 and t.median_ms == 0.02 and clock.launches == 20
    assert "a disturbed set of 10 runs (median 20 ms, q20 0.02, q80 20) timed again: median 0.02 ms" in caplog.text
    assert "kept the second" in caplog.text
    clock.launches = 0
    clock.durations = [1.0, 1.1, 1.0, 1.2, 1.0, 1.05, 1.0, 1.1, 1.0, 1.0] + [0.5] * 10
    t = timed_runs(run, 0, 10)
    assert not t.retimed and t.median_ms == 1.0 and clock.launches == 10
    # the second set disturbed worse: the first's figures stand
    clock.launches = 0
    clock.durations = [1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 1.0, 1.0, 9.0, 1.0] + [9.0] * 10
    t = timed_runs(run, 0, 10)
    assert t.retimed and t.median_ms == 1.0 and t.q80_ms == 9.0
    # a second set cut at ``cut_ms`` leaves the first's figures (the first was not cut)
    clock.launches = 0
    clock.durations = [1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 1.0, 1.0, 9.0, 1.0] + [9.0] * 10
    t = timed_runs(run, 0, 10, cut_ms=5.0)
    assert t.retimed and not t.cut and t.runs == 10 and t.median_ms == 1.0 and clock.launches == 10 + TIMED_FIRST_GROUP
    assert unstable(Timing(1.0, 1.0, UNSTABLE_SPREAD * 1.0 + 0.01, 10))
    assert not unstable(Timing(1.0, 1.0, UNSTABLE_SPREAD * 1.0, 10))
    assert not unstable(Timing(1.0, 1.0, 10.0, 10, cut=True)) and not unstable(Timing(1.0, 1.0, 10.0, 2))


def test_timing_lowers_the_thread_switch_interval_and_restores_it():
    """While a thread times (``prompt_gil``), another Python thread gives the GIL back within TIMING_SWITCH_INTERVAL
    rather than sys's default 5 ms; overlapping uses (other threads timing) restore it when the outermost ends, and
    an interval already lower is kept."""
    import sys
    import threading

    from miofind.harness import TIMING_SWITCH_INTERVAL, prompt_gil

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        inner_done, outer_release = threading.Event(), threading.Event()

        def other():
            with prompt_gil():
                inner_done.set()
                outer_release.wait(5)
        with prompt_gil():
            assert sys.getswitchinterval() == pytest.approx(TIMING_SWITCH_INTERVAL)
            t = threading.Thread(target=other)
            t.start()
            inner_done.wait(5)
        assert sys.getswitchinterval() == pytest.approx(TIMING_SWITCH_INTERVAL)   # the other thread still times
        outer_release.set()
        t.join(5)
        assert sys.getswitchinterval() == pytest.approx(0.005)
        sys.setswitchinterval(1e-5)
        with prompt_gil():
            assert sys.getswitchinterval() == pytest.approx(1e-5)
        assert sys.getswitchinterval() == pytest.approx(1e-5)
    finally:
        sys.setswitchinterval(before)


def test_reference_kind_takes_the_gemms_where_they_gain(monkeypatch):
    """auto: the naive kernel where it is quick; where it would be slow, the GEMMs per tap once the process
    has run a GEMM reference or once its naive references of such problems would have taken about as long as
    the GEMMs' first use (which sets cuBLAS up); the naive kernel where one
    sample's float64 temporaries would not fit and for thin groups (a 7x7 stem over 3 channels, depthwise);
    MIOFIND_REFERENCE overrides, within that memory bound."""
    from miofind import harness
    from miofind.harness import REFERENCE_TEMP_BYTES, naive_reference_ms, reference_kind
    from miofind.problem import ProblemDescription
    from miofind.reference import reference_bytes_per_sample

    tiny = ProblemDescription.from_key("16-8-8-3x3-16-8-8-2-1x1-1x1-1x1-0-NCHW-FP32-F")
    mid = ProblemDescription.from_key("64-56-56-3x3-64-56-56-96-1x1-1x1-1x1-0-NCHW-FP32-F")      # ~9 ms naive
    slow = ProblemDescription.make("W", n=96, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1)
    strided_b = ProblemDescription.make("B", n=384, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2)
    huge = ProblemDescription.make("B", n=1, c=256, k=256, in_size=(1024, 1024), filter_size=3, pads=1)
    stem = ProblemDescription.make("F", n=256, c=3, k=64, in_size=(224, 224), filter_size=7, pads=3, strides=2)
    depthwise = ProblemDescription.make("F", n=256, c=192, k=192, in_size=(56, 56), filter_size=3, pads=1, groups=192)
    # 25 taps: over 2 ms naive, but under the 25 GEMMs' host time
    many_taps = ProblemDescription.make("F", n=32, c=48, k=64, in_size=(35, 35), filter_size=5, pads=2)
    assert 2 < naive_reference_ms(many_taps) < 0.5 * 25
    monkeypatch.setattr(harness, "_gemm_used", True)
    assert reference_kind(many_taps) == "naive"
    assert reference_kind(ProblemDescription.make("F", n=256, c=48, k=64, in_size=(35, 35), filter_size=5,
                                                  pads=2)) == "gemm"     # 8x the work: ~20 ms naive
    assert reference_bytes_per_sample(huge) > REFERENCE_TEMP_BYTES
    assert 2 < naive_reference_ms(mid) < 30 < naive_reference_ms(slow) < 60 < naive_reference_ms(strided_b)
    # the reference's own kernels: channels-first, forward divided by the square root of the largest stride and
    # backward data by the stride itself; channels-last a rate of its own per direction at any stride
    f_s2 = strided_b.with_direction("F")
    assert naive_reference_ms(strided_b) == pytest.approx(naive_reference_ms(f_s2) * 2 ** 0.5)
    b_nhwc = ProblemDescription.make("B", n=384, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2,
                                     layout="NHWC")
    assert naive_reference_ms(b_nhwc) == pytest.approx(naive_reference_ms(strided_b) / 2)
    f_nhwc = b_nhwc.with_direction("F")     # 256 channels: the reference's warp-per-output kernel
    assert naive_reference_ms(f_nhwc) == pytest.approx(naive_reference_ms(f_s2) * 2.4 / 1.2 / 2 ** 0.5)
    f_narrow = ProblemDescription.make("F", n=384, c=256, k=256, in_size=(28, 28), filter_size=3, pads=1, strides=2,
                                       layout="NHWC", groups=16)
    assert naive_reference_ms(f_narrow) == pytest.approx(naive_reference_ms(f_s2) / 16 * 2.4 / 0.49 / 2 ** 0.5)
    w_nhwc = ProblemDescription.make("W", n=96, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1, layout="NHWC")
    assert naive_reference_ms(w_nhwc) == pytest.approx(naive_reference_ms(slow) * 0.6 / 1.8)
    every = (tiny, mid, slow, strided_b, huge, stem, depthwise)
    monkeypatch.delenv("MIOFIND_REFERENCE", raising=False)
    monkeypatch.setattr(harness, "_gemm_used", False)
    monkeypatch.setattr(harness, "_naive_spent_ms", 0.0)
    assert [reference_kind(p) for p in every] == ["naive", "naive", "naive", "gemm", "naive", "naive", "naive"]
    # the naive references run count: the tiny problem's does not (the GEMMs would not gain there), mid's does
    harness._count_naive(tiny)
    assert harness._naive_spent_ms == 0.0
    harness._count_naive(mid)
    assert harness._naive_spent_ms == pytest.approx(naive_reference_ms(mid))
    monkeypatch.setattr(harness, "_naive_spent_ms", 30.0)
    assert [reference_kind(p) for p in every] == ["naive", "naive", "gemm", "gemm", "naive", "naive", "naive"]
    monkeypatch.setattr(harness, "_naive_spent_ms", 0.0)
    monkeypatch.setattr(harness, "_gemm_used", True)
    assert [reference_kind(p) for p in every] == ["naive", "gemm", "gemm", "gemm", "naive", "naive", "naive"]
    monkeypatch.setenv("MIOFIND_REFERENCE", "gemm")
    assert [reference_kind(p) for p in every] == ["gemm", "gemm", "gemm", "gemm", "naive", "gemm", "gemm"]
    monkeypatch.setenv("MIOFIND_REFERENCE", "naive")
    assert [reference_kind(p) for p in every] == ["naive"] * 7
    monkeypatch.setenv("MIOFIND_REFERENCE", "fast")
    with pytest.raises(ValueError, match="MIOFIND_REFERENCE='fast'"):
        reference_kind(tiny)


# -- the timing hold (MIOFIND_FIND_TIMING=device), its kernel faked ---------------------------------

@pytest.fixture
def fake_hold(monkeypatch, fake_gpu):
    """fake_gpu with device timing: the hold's kernel records the microseconds of each launch."""
    holds = []
    monkeypatch.setenv("MIOFIND_FIND_TIMING", "device")
    monkeypatch.setattr("miofind.compile.compile_kernel",
                        lambda kinfo: lambda grid, block, args: holds.append(int(args[0]) / 1e3))
    return fake_gpu, holds


def test_hold_sizes_the_next_hold_from_the_longest_recent_enqueue(fake_hold):
    from miofind.harness import HOLD_MAX_US, HOLD_MIN_US, HOLD_PAD_US, HOLD_RECENT, HOLD_START_US, Hold

    _, holds = fake_hold
    h = Hold()
    h.launch()
    assert holds == [HOLD_START_US]
    assert h.enqueued(40e-6)                        # covered: 40 us of enqueueing under a 100 us hold
    assert h.us == 2 * 40 + HOLD_PAD_US
    assert h.enqueued(5e-6) and h.us == 2 * 40 + HOLD_PAD_US    # the longest recent one decides
    h.launch()
    assert not h.enqueued(120e-6)                   # the host outran the 90 us hold
    assert h.us == 2 * 120 + HOLD_PAD_US
    h.enqueued(0.5)
    assert h.us == HOLD_MAX_US
    for _ in range(HOLD_RECENT - 1):                # a slow call keeps deciding while it is recent ...
        h.enqueued(5e-6)
        assert h.us == HOLD_MAX_US
    h.enqueued(5e-6)                                # ... and no longer once HOLD_RECENT later calls were quick
    assert h.us == max(HOLD_MIN_US, 2 * 5 + HOLD_PAD_US)
    assert Hold().us == HOLD_START_US and HOLD_MIN_US <= HOLD_PAD_US


def test_hold_covers_a_set_run_by_run_and_sizes_the_next_for_its_runs(fake_hold):
    """A set's run is covered where the host had queued it before the GPU could reach it: after the hold and the
    runs before it. The hold for k runs then outlasts e + (k - 1) (e - g) twice over (e the longest recent enqueue, g
    the shortest recent run)."""
    from miofind.harness import HOLD_MAX_US, HOLD_PAD_US, HOLD_START_US, Hold

    _, holds = fake_hold
    h = Hold()
    assert h.runs_us(1) == HOLD_START_US and h.runs_us(3) == 3 * HOLD_START_US     # nothing seen yet
    h.launch(1)
    assert holds == [HOLD_START_US]
    # reached at 100, 200, 300 us: the third run was queued at 400 us, after the GPU could have reached it
    assert h.covered([50e-6, 120e-6, 400e-6], [0.1, 0.1, 0.1]) == [True, True, False]
    e, g = 280.0, 100.0
    assert h.runs_us(3) == pytest.approx(2 * (e + 2 * (e - g)) + HOLD_PAD_US)
    assert h.runs_us(1) == pytest.approx(2 * e + HOLD_PAD_US)
    h.covered([1e-6] * 4, [5.0] * 4)            # quick calls, long runs: only the first call needs the hold
    assert h.runs_us(5) == pytest.approx(2 * 1.0 + HOLD_PAD_US)
    h.covered([1.0], [0.001])                   # a 1 s enqueue: capped, HOLD_MAX_US a call
    assert h.runs_us(2) == 2 * HOLD_MAX_US and h.runs_us(1) == HOLD_MAX_US


def test_timed_runs_hold_the_gpu_once_a_set_of_runs(fake_hold, monkeypatch):
    """Device timing makes its timed runs in sets back to back after one hold: untimed warm-ups and ten timed runs, one
    hold; with early stop, the timed warm-ups, then the first TIMED_FIRST_GROUP timed runs, then the rest."""
    import miofind.harness as harness
    from miofind.harness import timed_runs

    (_, inv, clock), holds = fake_hold
    run = lambda: inv(None, None, None, None, None)  # noqa: E731
    clock.durations = [0.01]
    now = iter(range(10**6))
    monkeypatch.setattr(harness._time, "perf_counter", lambda: next(now) * 1e-6)   # each enqueue: 1 us, covered
    t = timed_runs(run, 2, 10)
    assert t.runs == 10 and t.median_ms == 0.01 and clock.launches == 12
    assert len(holds) == 1      # the ten timed runs, none for the untimed warm-ups
    holds.clear()
    clock.launches = 0
    t = timed_runs(run, 3, 10, cut_ms=1.0)
    assert t.runs == 10 and not t.cut and clock.launches == 13
    assert len(holds) == 3      # warm-ups, the first five, the other five
    holds.clear()
    clock.launches = 0
    t = timed_runs(run, 3, 10, cut_ms=1.0, settle=harness.SETTLE_SPREAD)
    assert t.runs == harness.TIMED_FIRST_GROUP and clock.launches == 3 + harness.TIMED_FIRST_GROUP and len(holds) == 2


def test_a_short_kernel_makes_its_timed_warmups_and_first_runs_in_one_set(fake_hold, monkeypatch):
    """With early stop, a kernel whose verification run (``first_ms``) says that its warm-ups and first
    TIMED_FIRST_GROUP timed runs take at most MERGED_SET_MS makes one warm-up untimed, then the other and those runs
    in one set, one hold sized from that warm-up's enqueue and the verification run's time: the same runs and figures;
    one cut in its warm-ups is still cut by them (after that set). A longer kernel keeps a set for its warm-ups."""
    import miofind.harness as harness
    from miofind.harness import MERGED_SET_MS, TIMED_FIRST_GROUP, timed_runs

    (_, inv, clock), holds = fake_hold
    run = lambda: inv(None, None, None, None, None)  # noqa: E731
    now = iter(range(10**6))
    monkeypatch.setattr(harness._time, "perf_counter", lambda: next(now) * 1e-6)
    clock.durations = [0.01]
    t = timed_runs(run, 3, 10, cut_ms=1.0, first_ms=0.01)
    assert t.runs == 10 and not t.cut and t.median_ms == 0.01 and clock.launches == 2 + 10 and len(holds) == 2
    holds.clear()
    clock.launches = 0
    t = timed_runs(run, 3, 10, cut_ms=1.0, settle=harness.SETTLE_SPREAD, first_ms=0.01)
    assert t.runs == TIMED_FIRST_GROUP and clock.launches == 2 + TIMED_FIRST_GROUP and len(holds) == 1
    holds.clear()
    clock.launches = 0
    clock.durations = [0.2]     # every run at 0.2 ms against a cut at 0.1 ms: cut by its warm-ups
    t = timed_runs(run, 3, 10, cut_ms=0.1, first_ms=0.2)
    assert t.cut and t.runs == 2 and clock.launches == 2 + TIMED_FIRST_GROUP and len(holds) == 1
    # the hold: 1 us enqueues (the untimed warm-up's) against 200 us runs: twice the enqueue plus the pad
    assert holds[0] == pytest.approx(2 * 1.0 + harness.HOLD_PAD_US, abs=0.01)     # us
    holds.clear()
    clock.launches = 0
    long_ms = MERGED_SET_MS / (2 + TIMED_FIRST_GROUP) * 1.01
    clock.durations = [long_ms]
    t = timed_runs(run, 3, 10, cut_ms=10 * long_ms, settle=harness.SETTLE_SPREAD, first_ms=long_ms)
    assert t.runs == TIMED_FIRST_GROUP and clock.launches == 2 + TIMED_FIRST_GROUP and len(holds) == 2


def test_timed_runs_make_sets_of_at_most_timed_set_max_runs(fake_hold, monkeypatch):
    """Many timed runs (``miofind run -i 45``) go in sets of at most TIMED_SET_MAX, a hold each."""
    import miofind.harness as harness

    (_, inv, clock), holds = fake_hold
    clock.durations = [0.01]
    now = iter(range(10**6))
    monkeypatch.setattr(harness._time, "perf_counter", lambda: next(now) * 1e-6)
    t = harness.timed_runs(lambda: inv(None, None, None, None, None), 1, 45)
    assert t.runs == 45 and clock.launches == 46 and len(holds) == 3 == -(-45 // harness.TIMED_SET_MAX)


def test_timed_runs_make_a_set_again_where_the_host_outran_the_hold(fake_hold, monkeypatch):
    """A set the host outran is made again under a hold sized from its enqueue times; where that is outrun too (it is
    capped), each uncovered run is made alone."""
    import miofind.harness as harness

    (_, inv, clock), holds = fake_hold
    run = lambda: inv(None, None, None, None, None)  # noqa: E731
    clock.durations = [0.01]
    now = iter(range(10**6))
    monkeypatch.setattr(harness._time, "perf_counter", lambda: next(now) * 1e-3)   # each call's enqueue: 1 ms
    t = harness.timed_runs(run, 0, 3)
    assert t.runs == 3 and t.median_ms == 0.01
    # 3 x HOLD_START_US outrun; then 2 (1 ms + 2 x 0.99 ms) + pad, covering all three runs
    assert holds[0] == 3 * harness.HOLD_START_US and len(holds) == 2
    assert holds[1] == pytest.approx(2 * (1000 + 2 * 990) + harness.HOLD_PAD_US)
    assert clock.launches == 6
    # 3 ms a call outruns even the capped hold (HOLD_MAX_US a run) at the third run: it alone is made again, alone
    # (twice: a single run's second try is kept either way)
    holds.clear()
    clock.launches = 0
    monkeypatch.setattr(harness._time, "perf_counter", lambda: next(now) * 3e-3)
    t = harness.timed_runs(run, 0, 3)
    assert t.runs == 3 and holds[1:] == [3 * harness.HOLD_MAX_US, harness.HOLD_MAX_US, harness.HOLD_MAX_US]
    assert clock.launches == 3 + 3 + 2


def test_the_timing_hold_compiles_for_sm90():
    from nvrtc_check import nvrtc_or_skip

    nvrtc_or_skip()
    from miofind.compile import nvrtc_compile
    from miofind.harness import hold_kernel_info

    assert nvrtc_compile(hold_kernel_info(), arch="sm_90")[:4] == b"\x7fELF"


def test_find_timing_names_the_variable_and_value(monkeypatch):
    from miofind import env

    monkeypatch.setenv("MIOFIND_FIND_TIMING", "Wall")
    assert env.find_timing() == "wall"
    monkeypatch.setenv("MIOFIND_FIND_TIMING", "kernel")
    with pytest.raises(ValueError, match="MIOFIND_FIND_TIMING='kernel'"):
        env.find_timing()
