/*===- consumer_c.c - A host that speaks the MLIR C API ------------------===*\
|*                                                                            *|
|* Uses Inkling through inkling-c/Dialects.h and MLIR's C API only: the sconv *|
|* dialect handle, registration, textual IR, the CPU and NVVM pipelines added *|
|* to a C pass manager (by name and with options), and checks of the result.  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "inkling-c/Dialects.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kLayer =
    "#layout = #sconv.layout<kv_heads = 2, head_dim = 16, hidden = 64, "
    "kernel = 4, tp = 1>\n"
    "func.func @layer(%buffer: memref<?xi8>, %qsl: memref<?xi32>,\n"
    "    %nc: memref<?xi32>, %bt: memref<?x?xi32>, %slots: memref<?xi64>,\n"
    "    %k: memref<?x2x16xbf16>, %wk: memref<32x4xbf16>,\n"
    "    %yk: memref<?x2x16xbf16>) {\n"
    "  %cache = sconv.bind %buffer layout #layout page_bytes 2048\n"
    "      : memref<?xi8> -> memref<?x2x4x128xbf16, strided<[1024, 512, 128, "
    "1]>>\n"
    "  %step = sconv.step query_start_loc %qsl num_computed %nc\n"
    "      block_table %bt slot_mapping %slots\n"
    "      : memref<?xi32>, memref<?xi32>, memref<?x?xi32>, memref<?xi64>\n"
    "  sconv.conv %k, %wk history %cache[k] layout #layout step %step into "
    "%yk\n"
    "      : memref<?x2x16xbf16>, memref<32x4xbf16>,\n"
    "        memref<?x2x4x128xbf16, strided<[1024, 512, 128, 1]>>\n"
    "        -> memref<?x2x16xbf16>\n"
    "  sconv.insert %k into %cache[k] layout #layout step %step\n"
    "      : memref<?x2x16xbf16>, memref<?x2x4x128xbf16, strided<[1024, 512, "
    "128, 1]>>\n"
    "  return\n"
    "}\n";

static int failures = 0;
static void check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  failures += !ok;
}

/* Appends printed IR or an error message to a growing string. */
typedef struct {
  char *data;
  size_t size;
} Text;
static void append(MlirStringRef piece, void *userData) {
  Text *text = (Text *)userData;
  char *grown = (char *)realloc(text->data, text->size + piece.length + 1);
  if (!grown)
    return;
  memcpy(grown + text->size, piece.data, piece.length);
  text->size += piece.length;
  grown[text->size] = '\0';
  text->data = grown;
}

/* Parses the layer, runs `pipeline` (textual, or NULL to use `add`) and
 * returns the printed result (caller frees) or NULL. */
static char *lower(MlirContext context, const char *pipeline,
                   MlirLogicalResult (*add)(MlirOpPassManager, MlirStringRef,
                                            MlirStringCallback, void *),
                   const char *options) {
  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(kLayer));
  if (mlirModuleIsNull(module))
    return NULL;
  MlirPassManager pm = mlirPassManagerCreate(context);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  Text errors = {NULL, 0};
  MlirLogicalResult added =
      pipeline
          ? mlirOpPassManagerAddPipeline(
                opm, mlirStringRefCreateFromCString(pipeline), append, &errors)
          : add(opm, mlirStringRefCreateFromCString(options), append, &errors);
  char *result = NULL;
  if (mlirLogicalResultIsFailure(added)) {
    printf("  pipeline not added: %s\n", errors.data ? errors.data : "");
  } else if (mlirLogicalResultIsSuccess(
                 mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)))) {
    Text printed = {NULL, 0};
    mlirOperationPrint(mlirModuleGetOperation(module), append, &printed);
    result = printed.data;
  }
  free(errors.data);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  return result;
}

static MlirLogicalResult badOptions(MlirOpPassManager pm) {
  return inklingAddLowerToCPUPipeline(
      pm, mlirStringRefCreateFromCString("no-such-option=1"), NULL, NULL);
}

int main(void) {
  printf("Inkling %s (MLIR %s) through the C API\n", inklingGetVersion(),
         inklingGetMLIRVersion());

  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  inklingRegisterAllDialects(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  MlirDialectHandle sconv = mlirGetDialectHandle__sconv__();
  MlirDialect dialect = mlirDialectHandleLoadDialect(sconv, context);
  MlirStringRef ns = mlirDialectGetNamespace(dialect);
  check(!mlirDialectIsNull(dialect) && ns.length == 5 &&
            strncmp(ns.data, "sconv", 5) == 0,
        "the sconv dialect handle loads the dialect");
  inklingRegisterPasses();
  inklingRegisterPipelines();

  /* By name, as any textual pipeline. */
  char *cpu =
      lower(context, "inkling-lower-to-cpu{emit-c-interface=true}", NULL, NULL);
  check(cpu && strstr(cpu, "llvm.func @_mlir_ciface_layer") &&
            !strstr(cpu, "sconv."),
        "inkling-lower-to-cpu by name: LLVM dialect, no sconv op left");
  free(cpu);

  /* With options, through the typed entry points. */
  char *cpuUnfused =
      lower(context, NULL, inklingAddLowerToCPUPipeline, "fusion=none");
  check(cpuUnfused && strstr(cpuUnfused, "llvm.func @layer"),
        "inklingAddLowerToCPUPipeline(fusion=none)");
  free(cpuUnfused);
  char *gpu = lower(context, NULL, inklingAddLowerToNVVMPipeline,
                    "chip=sm_90 format=isa");
  check(gpu && strstr(gpu, "gpu.binary") && strstr(gpu, ".target sm_90"),
        "inklingAddLowerToNVVMPipeline(chip=sm_90 format=isa): PTX");
  free(gpu);

  /* Bad options are an error, not a crash. */
  MlirPassManager pm = mlirPassManagerCreate(context);
  check(mlirLogicalResultIsFailure(
            badOptions(mlirPassManagerGetAsOpPassManager(pm))),
        "unknown pipeline options are rejected");
  mlirPassManagerDestroy(pm);

  mlirContextDestroy(context);
  printf("%s\n", failures ? "inkling-consumer-c: FAILED"
                          : "inkling-consumer-c: all checks passed");
  return failures ? 1 : 0;
}
