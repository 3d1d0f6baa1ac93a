// The target that builds cmake/pch/MLIRHeaders.h (PrecompiledHeaders.cmake).
