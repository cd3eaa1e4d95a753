"""A GEMM solver's tuned config is a cuBLASLt heuristic place, ranked for the GPU it was tuned on: the system DB's
config of another GPU model (an H100's, read on an H200: both sm_90 with 132 SMs) is not used, the default is
(trust.other_model), and a find record carrying one is not offered; configs of the same model, of a nameless device, of the user DB and of other solvers are."""

from __future__ import annotations

import time
import warnings

from miofind import find
from miofind.db import FindDB
from miofind.db.findb import PerfRecord
from miofind.db.system import Overlay
from miofind.device import DeviceInfo
from miofind.problem import ProblemDescription
from miofind.registry import get_solver
from miofind.trust import other_model, trust_key

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132, "580.1", "13.0", "14.2.0")
H200 = DeviceInfo("NVIDIA H200", "sm_90", 132, "580.1", "13.0", "14.2.0")
NAMELESS = DeviceInfo("", "sm_90", 132, "", "13.0", "14.2.0")
P = ProblemDescription.make("W", layout="NHWC", dtype="FP16", n=32, c=1024, k=256, in_size=(14, 14), filter_size=1)
GEMM = get_solver("GemmWrw1x1_stride1")
HOPPER = get_solver("ConvImplicitGemmHopperWrw")
GEMM_CFG = {"LT": 2, "SK": 4, "RED": 2}


def perf(dev, s, cfg):
    return PerfRecord(dev.db_name if dev is not H100 else "sm_90-132", P.key(), s.id, cfg, 0.01,
                      kernel_hash=trust_key(s), cuda_version="13.0", device_name=dev.name, created_at=time.time())


def test_gemm_configs_are_device_bound_and_others_are_not():
    assert GEMM.config_device_bound and not HOPPER.config_device_bound
    assert GEMM.is_valid_config(P.as_conv(), GEMM_CFG)
    r = perf(H100, GEMM, GEMM_CFG)
    assert other_model(r, H200, GEMM) and not other_model(r, H100, GEMM) and not other_model(r, NAMELESS, GEMM)
    assert not other_model(perf(H100, HOPPER, HOPPER.default_config(P)), H200, HOPPER)


def test_system_config_of_another_model_is_not_used(tmp_path):
    hop_cfg = dict(HOPPER.default_config(P), SPLITK=2)
    assert hop_cfg != HOPPER.default_config(P) and HOPPER.is_valid_config(P.as_conv(), hop_cfg)
    with FindDB(str(tmp_path / "system.sqlite")) as sysdb:
        sysdb.store_perf([perf(H100, GEMM, GEMM_CFG), perf(H100, HOPPER, hop_cfg)])
        dbs = Overlay(None, sysdb)
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # passed over silently: no defect of the record
            assert find.tuned_config(dbs, H200, P, GEMM) is None
        assert find.tuned_config(dbs, H200, P, HOPPER) == hop_cfg
        assert find.tuned_config(dbs, H100, P, GEMM) == GEMM_CFG
        assert find.tuned_config(dbs, NAMELESS, P, GEMM) == GEMM_CFG
        # the H200's own tuning, in its user DB (keyed by the full device name), is used
        with FindDB(str(tmp_path / "user.sqlite")) as user:
            own = {"LT": 1}
            user.store_perf([perf(H200, GEMM, own)])
            assert find.tuned_config(Overlay(user, sysdb), H200, P, GEMM) == own


def record(dev, s, cfg):
    from miofind import __version__
    from miofind.db import Record
    return Record(device="sm_90-132", device_name=dev.name, problem_key=P.key(), solver_id=s.id, algorithm=s.algorithm,
                  time_ms=0.01, workspace_bytes=s.workspace_bytes(P, cfg), package_version=__version__,
                  created_at=time.time(), kernel_hash=trust_key(s), cuda_version="13.0", verified=True, config=cfg)


def test_a_find_record_of_another_model_with_a_tuned_gemm_config_is_not_offered():
    cands = [GEMM, HOPPER]
    tuned = [record(H100, GEMM, GEMM_CFG), record(H100, HOPPER, HOPPER.default_config(P))]
    ids = lambda dev, recs: (lambda out: ({s.solver_id for s in out[0]}, out[1]))(
        find.trusted_solutions(recs, dev, P, cands, True, None))
    # the H100's GEMM record runs another cuBLASLt algorithm on an H200: not offered, the answer stays complete
    assert ids(H200, tuned) == ({HOPPER.id}, True)
    assert ids(H100, tuned) == ids(NAMELESS, tuned) == ({GEMM.id, HOPPER.id}, True)
    # the default config (this GPU's heuristic first) and no config mean the same thing on every model
    for cfg in (GEMM.default_config(P), None):
        assert ids(H200, [record(H100, GEMM, cfg), tuned[1]]) == ({GEMM.id, HOPPER.id}, True)
