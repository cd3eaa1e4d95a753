"""A numpy emulation of the implicit-GEMM index algebra (implicit_gemm_{fwd,bwd,wrw}.cu), for CPU checks.

``emulate(problem, a, b)`` evaluates, from the very macros the kernels are built with, every
operand element through the kernels' Row/Col/elem formulas (row part + column part of the offset,
bounds or divisibility predicates), multiplies the GEMMs in float64, and scatters the result
through the epilogue's row(m) + col(n) offsets (for backward weights through the split-K partial
buffer and the reduce kernel's mapping). Compare with miofind.reference.conv_reference.
``check_tiles(problem, config)`` replays the loaders' thread -> (row, kk) mapping and the math's
thread -> output mapping and checks each covers its tile exactly once.
"""

from __future__ import annotations

import numpy as np

from miofind.solvers.implicit_gemm_base import ImplicitGemmPlan, macros, nthreads, split_geometry, stage_elems

BIG = 1 << 29


def _split_taps(tap, m):
    s = tap % m["P_X"]
    t = tap // m["P_X"]
    return t // m["P_Y"], t % m["P_Y"], s  # z, r, s


def _split(kk, per_group, m, clast):
    """kk -> (channel, z, r, s) as split_kk / split_col: c-minor when clast."""
    taps = m["P_Z"] * m["P_Y"] * m["P_X"]
    if clast:
        tap, ch = kk // per_group, kk % per_group
    else:
        ch, tap = kk // taps, kk % taps
    z, r, s = _split_taps(tap, m)
    return ch, z, r, s


def _pix(idx, d, h, w):
    """Linear pixel index -> (n, d, h, w)."""
    iw = idx % w
    t = idx // w
    ih = t % h
    t //= h
    return t // d, t % d, ih, iw


def _in_range(v, lim):
    return (v >= 0) & (v < lim)


def _gather(flat, off, ok):
    out = np.zeros(off.shape)
    out[ok] = flat[off[ok]]
    return out


def emulate(problem, a: np.ndarray, b: np.ndarray, config=None) -> np.ndarray:
    """The kernels' result (float64) for inputs in io_shapes order of ``problem.as_conv()``."""
    from miofind.solvers.implicit_gemm_fwd import ImplicitGemmFwd
    from miofind.solvers.implicit_gemm_bwd import ImplicitGemmBwd
    from miofind.solvers.implicit_gemm_wrw import ImplicitGemmWrw

    p = problem.as_conv()
    solver = {"F": ImplicitGemmFwd, "B": ImplicitGemmBwd, "W": ImplicitGemmWrw}[p.direction]()
    cfg = dict(config) if config else solver.default_config(p)
    plan = ImplicitGemmPlan.of(p, cfg)
    m = macros(plan, cfg)
    G = m["P_G"]
    cpg, kpg = m["P_C"] // G, m["P_K"] // G
    taps = m["P_Z"] * m["P_Y"] * m["P_X"]
    af, bf = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    for t in plan.xposes:  # implicit_gemm_xpose.cu: [batch][rows][cols] -> [batch][cols][rows]
        src = af if t.operand == "a" else bf
        cp = np.ascontiguousarray(src.reshape(t.batch, t.rows, t.cols).transpose(0, 2, 1)).ravel()
        if t.operand == "a":
            af = cp
        else:
            bf = cp
    out_shape = p.io_shapes()[2]
    out = np.full(int(np.prod(out_shape)), np.nan)
    is3d = m["IS3D"]
    clast = m["KK_CLAST"]

    if p.direction == "F":
        M, N, K = m["P_N"] * m["P_DO"] * m["P_HO"] * m["P_WO"], kpg, cpg * taps
        mm = np.arange(M)[:, None]
        n, od, oh, ow = _pix(mm, m["P_DO"], m["P_HO"], m["P_WO"])
        d0, h0, w0 = od * m["P_SD"] - m["P_PD"], oh * m["P_SH"] - m["P_PH"], ow * m["P_SW"] - m["P_PW"]
        rbase = n * m["XS_N"] + d0 * m["XS_D"] + h0 * m["XS_H"] + w0 * m["XS_W"]
        kk = np.arange(K)[None, :]
        c, z, r, s = _split(kk, cpg, m, clast)
        dz, dy, dx = z * m["P_DD"], r * m["P_DH"], s * m["P_DW"]
        coff = c * m["XS_C"] + dz * m["XS_D"] + dy * m["XS_H"] + dx * m["XS_W"]
        ok = _in_range(h0 + dy, m["P_HI"]) & _in_range(w0 + dx, m["P_WI"])
        if is3d:
            ok &= _in_range(d0 + dz, m["P_DI"])
        kn = np.arange(N)[None, :]
        kt = np.arange(K)[:, None]
        if m["W_MATCH"]:
            boff = kn * m["WS_K"] + kt
        else:
            c2, z2, r2, s2 = _split(kt, cpg, m, clast)
            boff = kn * m["WS_K"] + c2 * m["WS_C"] + z2 * m["WS_Z"] + r2 * m["WS_Y"] + s2 * m["WS_X"]
        crow = (n * m["YS_N"] + od * m["YS_D"] + oh * m["YS_H"] + ow * m["YS_W"])
        ccol = kn * m["YS_C"]
        for g in range(G):
            A = _gather(af[g * cpg * m["XS_C"]:], rbase + coff, ok)
            B = bf[g * kpg * m["WS_K"]:][boff]
            out[g * kpg * m["YS_C"] + crow + ccol] = A @ B
    elif p.direction == "B":
        M, N, K = m["P_N"] * m["P_DI"] * m["P_HI"] * m["P_WI"], cpg, kpg * taps
        mm = np.arange(M)[:, None]
        n, i_d, ih, iw = _pix(mm, m["P_DI"], m["P_HI"], m["P_WI"])
        d0, h0, w0 = i_d + m["P_PD"], ih + m["P_PH"], iw + m["P_PW"]
        kk = np.arange(K)[None, :]
        k, z, r, s = _split(kk, kpg, m, clast)
        td, th, tw = d0 - z * m["P_DD"], h0 - r * m["P_DH"], w0 - s * m["P_DW"]
        ok = np.ones(td.shape, bool)
        for t, st, lim in ((th, "P_SH", "P_HO"), (tw, "P_SW", "P_WO")) + (((td, "P_SD", "P_DO"),) if is3d else ()):
            ok &= (t >= 0) & (t % m[st] == 0) & (t // m[st] < m[lim])
        od = np.where(is3d, td // m["P_SD"], 0)
        off = n * m["YS_N"] + k * m["YS_C"] + od * m["YS_D"] + (th // m["P_SH"]) * m["YS_H"] + (tw // m["P_SW"]) * m["YS_W"]
        cn = np.arange(N)[None, :]
        kt = np.arange(K)[:, None]
        k2, z2, r2, s2 = _split(kt, kpg, m, clast)
        boff = cn * m["WS_C"] + k2 * m["WS_K"] + z2 * m["WS_Z"] + r2 * m["WS_Y"] + s2 * m["WS_X"]
        crow = n * m["XS_N"] + i_d * m["XS_D"] + ih * m["XS_H"] + iw * m["XS_W"]
        ccol = cn * m["XS_C"]
        for g in range(G):
            A = _gather(af[g * kpg * m["YS_C"]:], np.where(ok, off, 0), ok)
            B = bf[g * kpg * m["WS_K"]:][boff]
            out[g * cpg * m["XS_C"] + crow + ccol] = A @ B
    else:
        M, N, K = kpg, cpg * taps, m["P_N"] * m["P_DO"] * m["P_HO"] * m["P_WO"]
        eff, kchunk = split_geometry(plan, cfg)
        km = np.arange(M)[:, None]
        j = np.arange(K)[None, :]
        n, od, oh, ow = _pix(j, m["P_DO"], m["P_HO"], m["P_WO"])
        aoff = km * m["YS_C"] + n * m["YS_N"] + od * m["YS_D"] + oh * m["YS_H"] + ow * m["YS_W"]
        col = np.arange(N)[None, :]
        c, z, r, s = _split(col, cpg, m, clast)
        dz, dy, dx = z * m["P_DD"], r * m["P_DH"], s * m["P_DW"]
        rbase = c * m["XS_C"] + dz * m["XS_D"] + dy * m["XS_H"] + dx * m["XS_W"]
        jt = np.arange(K)[:, None]
        n2, od2, oh2, ow2 = _pix(jt, m["P_DO"], m["P_HO"], m["P_WO"])
        d0, h0, w0 = od2 * m["P_SD"] - m["P_PD"], oh2 * m["P_SH"] - m["P_PH"], ow2 * m["P_SW"] - m["P_PW"]
        boff = rbase + n2 * m["XS_N"] + d0 * m["XS_D"] + h0 * m["XS_H"] + w0 * m["XS_W"]
        ok = _in_range(dy + h0, m["P_HI"]) & _in_range(dx + w0, m["P_WI"])
        if is3d:
            ok &= _in_range(dz + d0, m["P_DI"])
        ws = np.full(eff * m["P_K"] * N, np.nan)
        for g in range(G):
            A = af[g * kpg * m["YS_C"]:][aoff]
            B = _gather(bf[g * cpg * m["XS_C"]:], boff, ok)
            for sp in range(eff):
                lo, hi = sp * kchunk, min(K, (sp + 1) * kchunk)
                base = (sp * G + g) * kpg * N
                ws[base + km * N + col] = A[:, lo:hi] @ B[lo:hi]
        per = m["P_K"] * N
        i = np.arange(per)
        acc = ws.reshape(eff, per).sum(axis=0)
        colr, gk = i % N, i // N
        c, z, r, s = _split(colr, cpg, m, clast)
        out[gk * m["WS_K"] + c * m["WS_C"] + z * m["WS_Z"] + r * m["WS_Y"] + s * m["WS_X"]] = acc
    return out.reshape(out_shape)


def check_tiles(problem, config) -> None:
    """Replay the loaders' and the math's thread mappings of implicit_gemm_core.cu; AssertionError if a
    tile element is loaded or produced other than exactly once, or shared-memory slots collide."""
    p = problem.as_conv()
    cfg = dict(config)
    plan = ImplicitGemmPlan.of(p, cfg)
    nt = nthreads(plan.math, cfg)
    av, bv = plan.vecs(cfg)
    bk = cfg["BK"]
    for rows, kc, vec in ((cfg["BM"], plan.a_kc, av), (cfg["BN"], plan.b_kc, bv)):
        seen = np.zeros((rows, bk), int)
        slots = set()
        kouter = plan.math == 0 or not kc
        pad = (4 if plan.math == 0 else 8) if kouter else (8 if plan.math == 1 else 4)
        ld = rows + pad if kouter else bk + pad
        if kc:
            tk = bk // vec
            rp = nt // tk
            nr = -(-rows // rp)
            units = [((t // tk) + i * rp, (t % tk) * vec) for t in range(nt) for i in range(nr)]
        else:
            ul = rows // vec
            tr = min(ul, max(32, nt // bk))
            kp = nt // tr
            nr, nk = ul // tr, -(-bk // kp)
            units = [((t % tr) * vec + i * tr * vec, t // tr + l * kp) for t in range(nt) for l in range(nk)
                     for i in range(nr)]
        for r, k in units:
            if r >= rows or k >= bk:
                continue
            for e in range(vec):
                rr, kk = (r, k + e) if kc else (r + e, k)
                seen[rr, kk] += 1
                slot = kk * ld + rr if kouter else rr * ld + kk
                assert slot not in slots
                slots.add(slot)
            first = k * ld + r if kouter else r * ld + k
            assert (first * plan.esize) % (vec * plan.esize) == 0, "unit not aligned in shared memory"
        assert (seen == 1).all(), f"loader coverage {np.unique(seen)} for rows={rows} kc={kc} vec={vec}"
        assert max(slots) < stage_elems(plan.math, rows, bk, kc)
    out = np.zeros((cfg["BM"], cfg["BN"]), int)
    if plan.math == 0:
        tm, tn = cfg["TM"], cfg["TN"]
        ntx = cfg["BN"] // tn
        cwm, cwn = cfg["BM"] // (tm // 4), cfg["BN"] // (tn // 4)
        for t in range(nt):
            tx, ty = t % ntx, t // ntx
            for i in range(tm):
                for j in range(tn):
                    out[(i // 4) * cwm + 4 * ty + i % 4, (j // 4) * cwn + 4 * tx + j % 4] += 1
    else:
        wm, wn = cfg["WM"], cfg["WN"]
        warps_m = cfg["BM"] // wm
        for t in range(nt):
            lane, warp = t % 32, t // 32
            wm0, wn0 = (warp % warps_m) * wm, (warp // warps_m) * wn
            g, q = lane // 4, lane % 4
            for mi in range(wm // 16):
                for ni in range(wn // 8):
                    for h in range(2):
                        for e in range(2):
                            out[wm0 + mi * 16 + g + 8 * h, wn0 + ni * 8 + 2 * q + e] += 1
    assert (out == 1).all(), "math tile coverage"
