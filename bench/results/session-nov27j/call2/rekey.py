"""Session nov27j: cuBLASLt's version joins the trust key of the GEMM and Winograd solvers (cuBLASLt runs their
GEMMs, and its heuristic picks the algorithm; the GEMM solvers' configs name a place of its list). This appends
";cublaslt=130100" to the trust key (kernel_hash) of every find and perf record of those solvers in a FindDB file, and
writes the GEMM configs call 2 stored in their final form ({"LT": i}; call 2 ran a draft that also held the version,
{"CUBLASLT": "130100", "LT": i}). 130100 is the cuBLASLt of the H100 machine every shipped record was measured on
(call 2's device.txt); that machine's CUDA 13 / CuPy 14.2 image is the one all sessions used, so the older GEMM and
Winograd records were measured under it too (an assumption: the records did not store the cuBLAS version).
python3 rekey.py DB"""
import json, sqlite3, sys

VERSION = "130100"
IDS = ("GemmFwd1x1_0_1", "GemmFwdRest", "GemmBwd1x1_stride1", "GemmBwdRest", "GemmWrw1x1_stride1", "GemmWrwUniversal",
       "ConvWinograd3x3F23Fwd", "ConvWinograd3x3F23Bwd", "ConvWinograd3x3F43Fwd", "ConvWinograd3x3F43Bwd")
c = sqlite3.connect(sys.argv[1])
q = ",".join("?" * len(IDS))
for table in ("find_records", "perf_records"):
    n = c.execute(f"update {table} set kernel_hash = kernel_hash || ';cublaslt={VERSION}' where solver_id in ({q}) "
                  "and kernel_hash not like '%cublaslt=%'", IDS).rowcount
    print(f"{table}: {n} trust keys given cublaslt={VERSION}")
rows = c.execute(f"select id, config from find_records where solver_id in ({q}) and config like '%CUBLASLT%'", IDS).fetchall()
for rid, cfg in rows:
    d = json.loads(cfg)
    assert d.pop("CUBLASLT") == VERSION and set(d) == {"LT"}, cfg
    c.execute("update find_records set config = ? where id = ?", (json.dumps(d, sort_keys=True, allow_nan=False), rid))
print(f"{len(rows)} GEMM configs rewritten to {{'LT': i}}")
c.commit()
c.execute("vacuum")
