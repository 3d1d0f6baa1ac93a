//===- Dialects.cpp - C API of the sconv dialect and Inkling --------------===//

#include "inkling-c/Dialects.h"
#include "inkling/Dialect/SConv/IR/SConvDialect.h"
#include "inkling/InitInkling.h"
#include "inkling/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(SConv, sconv,
                                      inkling::sconv::SConvDialect)

void inklingRegisterAllDialects(MlirDialectRegistry registry) {
  inkling::registerAllDialects(*unwrap(registry));
}

void inklingRegisterPasses(void) { inkling::registerAllPasses(); }

void inklingRegisterPipelines(void) { inkling::registerAllPasses(); }

namespace {
/// Parses `options` into the pipeline's options struct and appends the
/// pipeline; errors go to `errorCallback`.
template <typename Options, typename Build>
MlirLogicalResult addPipeline(const char *name, MlirOpPassManager passManager,
                              MlirStringRef options,
                              MlirStringCallback errorCallback, void *userData,
                              Build build) {
  // parseFromString reports the offending option on `os`.
  std::string errors;
  llvm::raw_string_ostream os(errors);
  auto parsed = std::make_unique<Options>();
  if (mlir::failed(parsed->parseFromString(unwrap(options), os)))
    parsed.reset();
  if (!parsed) {
    if (errorCallback) {
      std::string message = std::string("invalid options for ") + name + ": '" +
                            unwrap(options).str() + "'";
      if (!errors.empty())
        message += ": " + errors;
      errorCallback(mlirStringRefCreate(message.data(), message.size()),
                    userData);
    }
    return mlirLogicalResultFailure();
  }
  build(*unwrap(passManager), *parsed);
  return mlirLogicalResultSuccess();
}
} // namespace

MlirLogicalResult inklingAddLowerToCPUPipeline(MlirOpPassManager passManager,
                                               MlirStringRef options,
                                               MlirStringCallback errorCallback,
                                               void *userData) {
  return addPipeline<inkling::LowerToCPUOptions>(
      "inkling-lower-to-cpu", passManager, options, errorCallback, userData,
      inkling::buildLowerToCPUPipeline);
}

MlirLogicalResult inklingAddLowerToNVVMPipeline(
    MlirOpPassManager passManager, MlirStringRef options,
    MlirStringCallback errorCallback, void *userData) {
  return addPipeline<inkling::LowerToNVVMOptions>(
      "inkling-lower-to-nvvm", passManager, options, errorCallback, userData,
      inkling::buildLowerToNVVMPipeline);
}

const char *inklingGetVersion(void) { return inkling::getVersion(); }

const char *inklingGetMLIRVersion(void) { return inkling::getMLIRVersion(); }
