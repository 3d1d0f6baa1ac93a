/*===- Dialects.h - C API of the sconv dialect and Inkling -------*- C -*-===*\
|*                                                                            *|
|* Inkling for hosts that speak the MLIR C API (mlir-c/IR.h, mlir-c/Pass.h):  *|
|* the sconv dialect handle, registration of the dialects, passes and named   *|
|* pipelines, and the pipelines added to a pass manager with their options.   *|
|* Link Inkling::CAPI (find_package(Inkling)); see README "Use it from your   *|
|* compiler".                                                                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef INKLING_C_DIALECTS_H
#define INKLING_C_DIALECTS_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `mlirGetDialectHandle__sconv__()`: insert or load the sconv dialect
 * (mlirDialectHandleInsertDialect / mlirDialectHandleLoadDialect). */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(SConv, sconv);

/* Adds sconv and every dialect, interface and LLVM IR translation the
 * Inkling lowerings need (inkling::registerAllDialects) to `registry`. */
MLIR_CAPI_EXPORTED void
inklingRegisterAllDialects(MlirDialectRegistry registry);

/* Registers the sconv, conversion and GPU passes with MLIR's pass registry
 * (idempotent; includes the pipelines: see inklingRegisterPipelines). */
MLIR_CAPI_EXPORTED void inklingRegisterPasses(void);

/* Registers the named pipelines `sconv-fuse`, `inkling-lower-to-cpu` and
 * `inkling-lower-to-nvvm`, so that mlirOpPassManagerAddPipeline and
 * mlirParsePassPipeline accept them (idempotent). */
MLIR_CAPI_EXPORTED void inklingRegisterPipelines(void);

/* Appends `inkling-lower-to-cpu` with `options` (the pipeline's textual
 * options, e.g. "emit-c-interface=true fusion=none"; empty for the
 * defaults) to `passManager`, which must be anchored on builtin.module.
 * Invalid options: failure, and the message goes to `errorCallback`. */
MLIR_CAPI_EXPORTED MlirLogicalResult inklingAddLowerToCPUPipeline(
    MlirOpPassManager passManager, MlirStringRef options,
    MlirStringCallback errorCallback, void *userData);

/* The same for `inkling-lower-to-nvvm` (e.g. "chip=sm_90 format=isa"). */
MLIR_CAPI_EXPORTED MlirLogicalResult inklingAddLowerToNVVMPipeline(
    MlirOpPassManager passManager, MlirStringRef options,
    MlirStringCallback errorCallback, void *userData);

/* The Inkling version ("0.1.0") and the MLIR version it was built against
 * ("22.1.8"). */
MLIR_CAPI_EXPORTED const char *inklingGetVersion(void);
MLIR_CAPI_EXPORTED const char *inklingGetMLIRVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* INKLING_C_DIALECTS_H */
