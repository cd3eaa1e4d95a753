// Generic builds (miofind/generic.py): pre-included before a kernel source whose size and stride
// macros are defined as MIOFIND_GP(i), a read of slot i of this module's constant parameter block.
// One cubin then serves every problem of its (source, config, data type, layout, index width);
// each problem loads its own module instance and writes its sizes into that instance's block
// once. MIOFIND_GP(i) contains brackets on purpose: a size macro used in #if is then a
// preprocessing error rather than a silent 0.
#ifndef INDEX_T
#define INDEX_T int
#endif
#ifndef MIOFIND_GP_SLOTS
#define MIOFIND_GP_SLOTS 64
#endif
__constant__ INDEX_T miofind_gp[MIOFIND_GP_SLOTS];
#define MIOFIND_GP(i) (miofind_gp[i])
