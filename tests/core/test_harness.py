"""The harness's run planning: slow candidates get fewer timed runs, never fewer than three."""

from miofind.harness import MIN_TIMED_RUNS, plan_runs


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
