//===- SConvInterfaces.cpp - sconv op interfaces --------------------------===//

#include "inkling/Dialect/SConv/IR/SConvInterfaces.h"

#include "inkling/Dialect/SConv/IR/SConvInterfaces.cpp.inc"
