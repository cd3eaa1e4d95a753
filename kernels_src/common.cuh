// Shared helpers for miofind kernels: data-type conversions and the index type.
// Included textually by miofind.compile (so the source hash covers it).
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#ifndef DATA_T
#define DATA_T float
#endif
#ifndef ACC_T
#define ACC_T float
#endif
#ifndef INDEX_T
#define INDEX_T int
#endif

typedef DATA_T data_t;
typedef ACC_T acc_t;
typedef INDEX_T index_t;

__device__ __forceinline__ acc_t to_acc(float v) { return (acc_t)v; }
__device__ __forceinline__ acc_t to_acc(double v) { return (acc_t)v; }
__device__ __forceinline__ acc_t to_acc(__half v) { return (acc_t)__half2float(v); }
__device__ __forceinline__ acc_t to_acc(__nv_bfloat16 v) { return (acc_t)__bfloat162float(v); }

__device__ __forceinline__ void store_acc(float* p, acc_t v) { *p = (float)v; }
__device__ __forceinline__ void store_acc(double* p, acc_t v) { *p = (double)v; }
__device__ __forceinline__ void store_acc(__half* p, acc_t v) { *p = __float2half_rn((float)v); }
__device__ __forceinline__ void store_acc(__nv_bfloat16* p, acc_t v) { *p = __float2bfloat16_rn((float)v); }
