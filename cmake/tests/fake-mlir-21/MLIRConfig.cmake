# A stand-in MLIR 21 package (no targets) for inkling-package-mlir-mismatch.
set(MLIR_INCLUDE_DIRS "${CMAKE_CURRENT_LIST_DIR}/include")
set(LLVM_PACKAGE_VERSION 21.1.0)
