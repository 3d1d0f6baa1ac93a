//===- Cuda.cpp - The CUDA driver API, loaded at run time -----------------===//
//
// No cuda.h: the entry points, their signatures and the driver types are
// listed once in CudaDriverApi.h. Versioned entry points are looked up by the
// names cuda.h maps them to (cuMemAlloc -> cuMemAlloc_v2, ...).
//
//===----------------------------------------------------------------------===//

#include "inkling/Runtime/Cuda.h"
#include "CudaDriverApi.h"

#include <dlfcn.h>

#include <fstream>
#include <mutex>
#include <sstream>

namespace inkling::cuda {

namespace {
using namespace driver;

constexpr int kAttrComputeMajor =
    75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor =
    76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
} // namespace

struct Driver::Api {
#define INKLING_CUDA_FIELD(name, symbol, fallback, params)                     \
  CUresult(*name) params;
  INKLING_CUDA_DRIVER_API(INKLING_CUDA_FIELD)
#undef INKLING_CUDA_FIELD
#define INKLING_CUDA_OPTIONAL_FIELD(name, params)                              \
  CUresult(*name) params = nullptr;
  INKLING_CUDA_OPTIONAL_API(INKLING_CUDA_OPTIONAL_FIELD)
#undef INKLING_CUDA_OPTIONAL_FIELD
};

namespace {

/// Looks up the first of `names` that the library exports.
template <typename Fn>
bool resolve(void *library, Fn &fn, std::initializer_list<const char *> names,
             std::string &missing) {
  for (const char *name : names) {
    if (void *symbol = dlsym(library, name)) {
      fn = reinterpret_cast<Fn>(symbol);
      return true;
    }
  }
  missing = *names.begin();
  return false;
}

} // namespace

Status Driver::check(CUresult result, const char *call) const {
  if (result == 0)
    return Status::ok();
  const char *name = nullptr;
  const char *text = nullptr;
  if (api_ && api_->cuGetErrorName)
    api_->cuGetErrorName(result, &name);
  if (api_ && api_->cuGetErrorString)
    api_->cuGetErrorString(result, &text);
  return internalError(std::string(call) +
                       " failed: " + (name ? name : "CUDA error") + " (" +
                       std::to_string(result) + ")" +
                       (text ? std::string(": ") + text : std::string()));
}

StatusOr<std::unique_ptr<Driver>> Driver::load(const std::string &library,
                                               int ordinal) {
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return unavailable("no CUDA driver: " + library + " could not be loaded (" +
                       (why ? why : "unknown dlopen error") + ")");
  }
  std::unique_ptr<Driver> driver(new Driver());
  driver->library_ = handle;
  driver->api_ = std::make_unique<Api>();
  Api &a = *driver->api_;
  std::string missing;
  bool ok = true;
#define INKLING_CUDA_RESOLVE(name, symbol, fallback, params)                   \
  ok = ok && resolve(handle, a.name, {#symbol, #fallback}, missing);
  INKLING_CUDA_DRIVER_API(INKLING_CUDA_RESOLVE)
#undef INKLING_CUDA_RESOLVE
  if (!ok)
    return unavailable("no CUDA driver: " + library + " lacks " + missing +
                       " (driver too old?)");
#define INKLING_CUDA_RESOLVE_OPTIONAL(name, params)                            \
  a.name = reinterpret_cast<decltype(a.name)>(dlsym(handle, #name));
  INKLING_CUDA_OPTIONAL_API(INKLING_CUDA_RESOLVE_OPTIONAL)
#undef INKLING_CUDA_RESOLVE_OPTIONAL

  Driver &d = *driver;
  CUresult init = a.cuInit(0);
  if (init != 0)
    return unavailable("no CUDA device: " + d.check(init, "cuInit").message());
  int count = 0;
  if (Status s = d.check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
      !s.isOk())
    return unavailable("no CUDA device: " + s.message());
  if (ordinal < 0 || ordinal >= count)
    return unavailable("no CUDA device: device " + std::to_string(ordinal) +
                       " requested, " + std::to_string(count) + " present");
  if (Status s = d.check(a.cuDeviceGet(&d.device_, ordinal), "cuDeviceGet");
      !s.isOk())
    return s;
  char name[256] = {};
  if (Status s = d.check(a.cuDeviceGetName(name, sizeof(name) - 1, d.device_),
                         "cuDeviceGetName");
      !s.isOk())
    return s;
  d.deviceName_ = name;
  int major = 0, minor = 0;
  if (Status s =
          d.check(a.cuDeviceGetAttribute(&major, kAttrComputeMajor, d.device_),
                  "cuDeviceGetAttribute");
      !s.isOk())
    return s;
  if (Status s =
          d.check(a.cuDeviceGetAttribute(&minor, kAttrComputeMinor, d.device_),
                  "cuDeviceGetAttribute");
      !s.isOk())
    return s;
  d.computeCapability_ = major * 10 + minor;
  if (Status s = d.check(a.cuDriverGetVersion(&d.driverVersion_),
                         "cuDriverGetVersion");
      !s.isOk())
    return s;
  if (Status s = d.check(a.cuDevicePrimaryCtxRetain(&d.context_, d.device_),
                         "cuDevicePrimaryCtxRetain");
      !s.isOk())
    return s;
  if (Status s = d.makeCurrent(); !s.isOk())
    return s;
  return std::move(driver);
}

Driver::~Driver() {
  if (api_ && context_)
    api_->cuDevicePrimaryCtxRelease(device_);
  // The library stays loaded: the driver does not support being unloaded
  // while the process may still hold its state.
}

StatusOr<Driver *> Driver::get() {
  static std::once_flag once;
  static Driver *instance = nullptr;
  static Status *failure = nullptr;
  std::call_once(once, [] {
    auto loaded = load("libcuda.so.1");
    if (loaded)
      instance = loaded->release();
    else
      failure = new Status(loaded.status());
  });
  if (!instance)
    return *failure;
  if (Status s = instance->makeCurrent(); !s.isOk())
    return s;
  return instance;
}

Status Driver::makeCurrent() {
  return check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

StatusOr<DevicePtr> Driver::alloc(size_t bytes) {
  CUdeviceptr ptr = 0;
  if (Status s = check(api_->cuMemAlloc(&ptr, bytes ? bytes : 1), "cuMemAlloc");
      !s.isOk())
    return s;
  return static_cast<DevicePtr>(ptr);
}

Status Driver::free(DevicePtr ptr) {
  return check(api_->cuMemFree(ptr), "cuMemFree");
}

Status Driver::copyToDevice(DevicePtr dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return Status::ok();
  return check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

Status Driver::copyToHost(void *dst, DevicePtr src, size_t bytes) {
  if (bytes == 0)
    return Status::ok();
  return check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

Status Driver::copyOnDevice(DevicePtr dst, DevicePtr src, size_t bytes,
                            Stream stream) {
  if (bytes == 0)
    return Status::ok();
  return check(api_->cuMemcpyDtoDAsync(dst, src, bytes, stream),
               "cuMemcpyDtoDAsync");
}

Status Driver::memset(DevicePtr dst, uint8_t value, size_t bytes) {
  if (bytes == 0)
    return Status::ok();
  return check(api_->cuMemsetD8(dst, value, bytes), "cuMemsetD8");
}

Status Driver::synchronize() {
  return check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

StatusOr<Event> Driver::createEvent() {
  CUevent event = nullptr;
  if (Status s = check(api_->cuEventCreate(&event, 0), "cuEventCreate");
      !s.isOk())
    return s;
  return static_cast<Event>(event);
}

Status Driver::destroyEvent(Event event) {
  return check(api_->cuEventDestroy(event), "cuEventDestroy");
}

Status Driver::record(Event event, Stream stream) {
  return check(api_->cuEventRecord(event, stream), "cuEventRecord");
}

StatusOr<float> Driver::elapsedMs(Event start, Event end) {
  if (Status s = check(api_->cuEventSynchronize(end), "cuEventSynchronize");
      !s.isOk())
    return s;
  float ms = 0;
  if (Status s = check(api_->cuEventElapsedTime(&ms, start, end),
                       "cuEventElapsedTime");
      !s.isOk())
    return s;
  return ms;
}

StatusOr<void *> Driver::loadModule(const std::string &image) {
  CUmodule module = nullptr;
  // PTX must be NUL-terminated; std::string's buffer is.
  if (Status s = check(api_->cuModuleLoadData(&module, image.c_str()),
                       "cuModuleLoadData");
      !s.isOk())
    return s;
  return static_cast<void *>(module);
}

bool Driver::emulates() const {
  return api_->inklingEmuAttachHostForm != nullptr;
}

Status Driver::attachHostForm(void *module, const std::string &hostForm) {
  if (!emulates())
    return failedPrecondition("the driver does not execute host forms");
  return check(
      api_->inklingEmuAttachHostForm(module, hostForm.data(), hostForm.size()),
      "inklingEmuAttachHostForm");
}

Status Driver::unloadModule(void *module) {
  return check(api_->cuModuleUnload(module), "cuModuleUnload");
}

StatusOr<void *> Driver::function(void *module, const std::string &name) {
  CUfunction fn = nullptr;
  if (Status s = check(api_->cuModuleGetFunction(&fn, module, name.c_str()),
                       "cuModuleGetFunction");
      !s.isOk())
    return Status(s.code(), s.message() + " (kernel " + name + ")");
  return static_cast<void *>(fn);
}

Status Driver::launch(void *function, std::array<int64_t, 3> grid,
                      std::array<int64_t, 3> block, void **params,
                      Stream stream) {
  for (int i = 0; i < 3; ++i) {
    if (grid[i] < 1 || grid[i] > 0x7fffffff || (i > 0 && grid[i] > 65535))
      return invalidArgument("grid dimension " + std::to_string(i) + " = " +
                             std::to_string(grid[i]) + " is out of range");
    if (block[i] < 1 || block[i] > 1024)
      return invalidArgument("block dimension " + std::to_string(i) + " = " +
                             std::to_string(block[i]) + " is out of range");
  }
  return check(
      api_->cuLaunchKernel(
          function, static_cast<unsigned>(grid[0]),
          static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]),
          static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]),
          static_cast<unsigned>(block[2]), 0, stream, params, nullptr),
      "cuLaunchKernel");
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

StatusOr<DeviceBuffer> DeviceBuffer::allocate(Driver &driver, size_t bytes) {
  auto ptr = driver.alloc(bytes);
  if (!ptr)
    return ptr.status();
  DeviceBuffer buffer;
  buffer.driver_ = &driver;
  buffer.ptr_ = *ptr;
  buffer.bytes_ = bytes;
  return std::move(buffer);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (driver_ && ptr_)
      (void)driver_->free(ptr_);
    driver_ = other.driver_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.driver_ = nullptr;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (driver_ && ptr_)
    (void)driver_->free(ptr_);
}

//===----------------------------------------------------------------------===//
// KernelBundle
//===----------------------------------------------------------------------===//

StatusOr<std::unique_ptr<KernelBundle>>
KernelBundle::load(Driver &driver, const std::string &directory) {
  return loadModules(
      driver, KernelManifest::load(directory),
      [&](const std::string &file) -> StatusOr<std::string> {
        std::string path = directory + "/" + file;
        std::ifstream in(path, std::ios::binary);
        if (!in)
          return notFound("kernel bundle: cannot open " + path);
        std::ostringstream bytes;
        bytes << in.rdbuf();
        return bytes.str();
      },
      directory + "/");
}

StatusOr<std::unique_ptr<KernelBundle>>
KernelBundle::load(Driver &driver, std::string_view manifestJson,
                   const std::map<std::string, std::string> &objects) {
  return loadModules(
      driver, KernelManifest::parse(manifestJson),
      [&](const std::string &file) -> StatusOr<std::string> {
        auto it = objects.find(file);
        if (it == objects.end())
          return notFound("kernel bundle: no object " + file);
        return it->second;
      },
      "");
}

StatusOr<std::unique_ptr<KernelBundle>> KernelBundle::loadModules(
    Driver &driver, StatusOr<KernelManifest> manifest,
    const std::function<StatusOr<std::string>(const std::string &)> &object,
    const std::string &where) {
  if (!manifest)
    return manifest.status();
  std::unique_ptr<KernelBundle> bundle(
      new KernelBundle(driver, std::move(*manifest)));
  for (const KernelSpec &kernel : bundle->manifest_.kernels) {
    auto bytes = object(kernel.file);
    if (!bytes)
      return bytes.status();
    auto module = driver.loadModule(*bytes);
    if (!module)
      return Status(module.status().code(), "kernel bundle: " + where +
                                                kernel.file + ": " +
                                                module.status().message());
    bundle->modules_.push_back(*module);
    // An emulating driver runs the kernel's host form; a real one never
    // sees it.
    if (!kernel.hostForm.empty() && driver.emulates()) {
      auto hostForm = object(kernel.hostForm);
      if (!hostForm)
        return hostForm.status();
      if (Status s = driver.attachHostForm(*module, *hostForm); !s.isOk())
        return Status(s.code(), "kernel bundle: " + where + kernel.hostForm +
                                    ": " + s.message());
    }
    auto fn = driver.function(*module, kernel.entry);
    if (!fn)
      return fn.status();
    bundle->functions_[kernel.name] = *fn;
  }
  return std::move(bundle);
}

KernelBundle::~KernelBundle() {
  for (void *module : modules_)
    (void)driver_.unloadModule(module);
}

Status KernelBundle::launch(const std::string &name,
                            const std::vector<MemRefArg> &args, Stream stream) {
  const KernelSpec *kernel = manifest_.findKernel(name);
  if (!kernel)
    return notFound("no kernel " + name + " in the bundle");
  auto params = packKernelParams(*kernel, args);
  if (!params)
    return params.status();
  auto tokens = tokenCount(*kernel, args);
  if (!tokens)
    return tokens.status();
  std::array<int64_t, 3> grid = kernel->gridFor(*tokens);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return Status::ok(); // No token: nothing to do.
  std::vector<void *> pointers;
  pointers.reserve(params->size() + 1);
  for (uint64_t &slot : *params)
    pointers.push_back(&slot);
  // A real driver reads as many as the kernel declares; the null lets the
  // fake driver (runtime/unittests) check the count.
  pointers.push_back(nullptr);
  return driver_.launch(functions_.at(name), grid, kernel->block,
                        pointers.data(), stream);
}

StatusOr<std::vector<std::vector<MemRefArg>>>
KernelBundle::bindLaunches(const std::string &host,
                           const std::vector<MemRefArg> &hostArgs) {
  const HostSpec *spec = manifest_.findHost(host);
  if (!spec)
    return notFound("no host function " + host + " in the bundle");
  // The scratch buffers this call needs, grown where a call needed less.
  std::vector<DeviceBuffer> &buffers = scratch_[host];
  buffers.resize(spec->scratch.size());
  std::vector<MemRefArg> scratch;
  for (size_t i = 0; i < spec->scratch.size(); ++i) {
    const ScratchSpec &buffer = spec->scratch[i];
    auto sizes = scratchSizes(buffer, hostArgs);
    if (!sizes)
      return Status(sizes.status().code(),
                    "host function " + host + ": " + sizes.status().message());
    size_t bytes = static_cast<size_t>(buffer.elementBytes);
    for (int64_t s : *sizes)
      bytes *= static_cast<size_t>(s);
    if (bytes > buffers[i].bytes()) {
      // Queued launches may still use the smaller buffer.
      if (buffers[i].bytes() != 0)
        if (Status s = driver_.synchronize(); !s.isOk())
          return s;
      buffers[i] = DeviceBuffer();
      auto grown = DeviceBuffer::allocate(driver_, bytes);
      if (!grown)
        return Status(grown.status().code(),
                      "host function " + host + ": scratch buffer " +
                          std::to_string(i) + " (" + buffer.type + ", " +
                          std::to_string(bytes) +
                          " bytes): " + grown.status().message());
      buffers[i] = std::move(*grown);
    }
    scratch.push_back({buffers[i].address(), *sizes, {}});
  }
  std::vector<std::vector<MemRefArg>> launches;
  for (const LaunchSpec &launchSpec : spec->launches) {
    std::vector<MemRefArg> &args = launches.emplace_back();
    for (int64_t index : launchSpec.hostArgs) {
      if (index < 0) {
        args.push_back(scratch[-1 - index]); // the parser checked it
        continue;
      }
      if (index >= static_cast<int64_t>(hostArgs.size()))
        return invalidArgument("host function " + host + " needs argument " +
                               std::to_string(index) + ", got " +
                               std::to_string(hostArgs.size()) + " arguments");
      args.push_back(hostArgs[index]);
    }
  }
  return launches;
}

size_t KernelBundle::scratchBytes() const {
  size_t bytes = 0;
  for (const auto &[host, buffers] : scratch_)
    for (const DeviceBuffer &buffer : buffers)
      bytes += buffer.bytes();
  return bytes;
}

Status KernelBundle::releaseScratch() {
  if (scratchBytes() == 0)
    return Status::ok();
  // Queued launches may still use them.
  if (Status s = driver_.synchronize(); !s.isOk())
    return s;
  scratch_.clear();
  return Status::ok();
}

Status KernelBundle::run(const std::string &host,
                         const std::vector<MemRefArg> &hostArgs,
                         Stream stream) {
  auto launches = bindLaunches(host, hostArgs);
  if (!launches)
    return launches.status();
  const HostSpec *spec = manifest_.findHost(host);
  for (size_t i = 0; i < spec->launches.size(); ++i)
    if (Status s = launch(spec->launches[i].kernel, (*launches)[i], stream);
        !s.isOk())
      return s;
  return Status::ok();
}

} // namespace inkling::cuda
