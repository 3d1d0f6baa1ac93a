//===- GpuExecutor.cpp - The layer's CUDA kernels, on device mirrors ------===//
//
// Every host buffer the server adds gets a device buffer of the same size,
// initialized from it. A call translates each host descriptor to the device
// (same offset inside the buffer), uploads the part of each argument the
// kernels read, runs the manifest's host function (its launches in program
// order) and downloads the part they write. Only the bytes an argument's
// sizes and strides reach move, so a decode step moves a few rows, not the
// buffers.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "inkling/Runtime/Cuda.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>

using namespace inkling;
using namespace inkling::run;
using exec::ArgRole;

namespace {

using Clock = std::chrono::steady_clock;

/// Bytes from an argument's data pointer to one past the last element its
/// sizes and strides reach (0 when a size is 0).
size_t extentBytes(const exec::MemRefArg &arg, int64_t elementBytes) {
  int64_t last = arg.offset;
  for (size_t d = 0; d < arg.sizes.size(); ++d) {
    if (arg.sizes[d] <= 0)
      return 0;
    last += (arg.sizes[d] - 1) * arg.strides[d];
  }
  return static_cast<size_t>((last + 1) * elementBytes);
}

class GpuExecutor final : public Executor {
public:
  GpuExecutor(exec::LayerProgram &program, std::unique_ptr<cuda::Driver> driver)
      : sig_(program.signature()), driver_(std::move(driver)) {}

  Status load(const KernelBundle &files) {
    auto bundle =
        cuda::KernelBundle::load(*driver_, files.manifest, files.files());
    if (!bundle)
      return bundle.status();
    bundle_ = std::move(*bundle);
    const HostSpec *host = bundle_->manifest().findHost(sig_.function);
    if (!host)
      return notFound("the kernel bundle has no host function @" +
                      sig_.function);
    launchesPerCall_ = static_cast<int64_t>(host->launches.size());
    for (cuda::Event &event : events_) {
      auto created = driver_->createEvent();
      if (!created)
        return created.status();
      event = *created;
    }
    return Status::ok();
  }

  ~GpuExecutor() override {
    for (cuda::Event event : events_)
      if (event)
        (void)driver_->destroyEvent(event);
  }

  std::string description() const override {
    int version = driver_->driverVersion();
    return "gpu (" + driver_->deviceName() + ", sm_" +
           std::to_string(driver_->computeCapability()) + ", driver " +
           std::to_string(version / 1000) + "." +
           std::to_string(version % 1000 / 10) + ")";
  }

  Status addBuffer(void *host, size_t bytes) override {
    auto device = cuda::DeviceBuffer::allocate(*driver_, bytes);
    if (!device)
      return device.status();
    Mirror mirror;
    mirror.host = static_cast<uint8_t *>(host);
    mirror.bytes = bytes;
    mirror.device = std::move(*device);
    auto start = Clock::now();
    Status s = driver_->copyToDevice(mirror.device.address(), host, bytes);
    transfer_ += std::chrono::duration<double>(Clock::now() - start).count();
    if (!s)
      return s;
    auto key = reinterpret_cast<uintptr_t>(host);
    mirrors_.erase(key);
    mirrors_.emplace(key, std::move(mirror));
    return Status::ok();
  }

  Status invoke(const std::vector<exec::MemRefArg> &args) override {
    // The host holds every buffer: the same checks as a CPU call, before
    // anything moves.
    if (Status s = exec::validateHostCall(sig_, args); !s)
      return s;
    deviceArgs_.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const exec::ArgInfo &info = sig_.args[i];
      const exec::MemRefArg &arg = args[i];
      size_t bytes = extentBytes(arg, exec::elementBytes(info.element));
      Mirror *mirror = nullptr;
      size_t at = 0;
      if (Status s = find(arg.data, bytes, mirror, at); !s)
        return Status(s.code(), "argument " + std::to_string(i) + " (" +
                                    exec::argRoleName(info.role) +
                                    "): " + s.message());
      deviceArgs_[i] = {mirror->device.address() + at, arg.sizes, arg.strides};
      // What the kernels read each call: the step's metadata, the inputs,
      // the status (zeroed). Weights and caches are on the device since
      // addBuffer; outputs come back after the launches.
      ArgRole role = info.role;
      // The attention KV caches live on the device like the conv cache.
      bool upload = role != ArgRole::Cache && role != ArgRole::KvCache &&
                    !info.isOutput() && !info.isParameter();
      // The step's metadata is the same for every layer of a step: sent
      // again only when it changed since the last upload.
      bool metadata =
          role == ArgRole::QueryStartLoc || role == ArgRole::NumComputed ||
          role == ArgRole::BlockTable || role == ArgRole::SlotMapping ||
          role == ArgRole::TokenSeq || role == ArgRole::AttnSlotMapping;
      if (metadata && mirror->sent.size() == bytes && mirror->sentAt == at &&
          std::memcmp(mirror->sent.data(), mirror->host + at, bytes) == 0)
        upload = false;
      if (!upload)
        continue;
      if (Status s = copy(*mirror, at, bytes, /*toDevice=*/true); !s)
        return s;
      if (metadata) {
        mirror->sent.assign(mirror->host + at, mirror->host + at + bytes);
        mirror->sentAt = at;
      }
    }
    // The launches alone, timed on the device.
    if (Status s = driver_->record(events_[0]); !s)
      return s;
    if (Status s = bundle_->run(sig_.function, deviceArgs_); !s)
      return s;
    if (Status s = driver_->record(events_[1]); !s)
      return s;
    auto ms = driver_->elapsedMs(events_[0], events_[1]);
    if (!ms)
      return ms.status();
    deviceSeconds_ += *ms / 1000.0;
    launches_ += launchesPerCall_;
    for (size_t i = 0; i < args.size(); ++i) {
      const exec::ArgInfo &info = sig_.args[i];
      if (!info.isOutput() && info.role != ArgRole::Status)
        continue;
      if (Status s = download(
              args[i].data,
              extentBytes(args[i], exec::elementBytes(sig_.args[i].element)));
          !s)
        return s;
    }
    return Status::ok();
  }

  Status copyCacheBytes(void *dst, const void *src, size_t bytes) override {
    Mirror *to = nullptr, *from = nullptr;
    size_t toAt = 0, fromAt = 0;
    if (Status s = find(dst, bytes, to, toAt); !s)
      return s;
    if (Status s = find(src, bytes, from, fromAt); !s)
      return s;
    return driver_->copyOnDevice(to->device.address() + toAt,
                                 from->device.address() + fromAt, bytes);
  }

  Status download(void *host, size_t bytes) override {
    Mirror *mirror = nullptr;
    size_t at = 0;
    if (Status s = find(host, bytes, mirror, at); !s)
      return s;
    return copy(*mirror, at, bytes, /*toDevice=*/false);
  }

  Status upload(const void *host, size_t bytes) override {
    Mirror *mirror = nullptr;
    size_t at = 0;
    if (Status s = find(host, bytes, mirror, at); !s)
      return s;
    mirror->sent.clear(); // the device no longer holds what was last sent
    return copy(*mirror, at, bytes, /*toDevice=*/true);
  }

  double transferSeconds() const override { return transfer_; }
  double deviceSeconds() const override { return deviceSeconds_; }
  int64_t launches() const override { return launches_; }

private:
  struct Mirror {
    uint8_t *host = nullptr;
    size_t bytes = 0;
    cuda::DeviceBuffer device;
    /// The bytes [sentAt, sentAt + sent.size()) last uploaded (metadata).
    std::vector<uint8_t> sent;
    size_t sentAt = 0;
  };

  /// The mirror holding [host, host + bytes), and the offset in it.
  Status find(const void *host, size_t bytes, Mirror *&mirror, size_t &at) {
    auto address = reinterpret_cast<uintptr_t>(host);
    auto it = mirrors_.upper_bound(address);
    if (it != mirrors_.begin()) {
      --it;
      Mirror &m = it->second;
      at = address - it->first;
      if (at + bytes <= m.bytes) {
        mirror = &m;
        return Status::ok();
      }
    }
    return invalidArgument(std::to_string(bytes) +
                           " bytes that no device buffer mirrors");
  }

  Status copy(Mirror &mirror, size_t at, size_t bytes, bool toDevice) {
    auto start = Clock::now();
    Status s = toDevice
                   ? driver_->copyToDevice(mirror.device.address() + at,
                                           mirror.host + at, bytes)
                   : driver_->copyToHost(mirror.host + at,
                                         mirror.device.address() + at, bytes);
    transfer_ += std::chrono::duration<double>(Clock::now() - start).count();
    return s;
  }

  const exec::LayerSignature &sig_;
  // Declared first, destroyed last: the buffers and the bundle use it.
  std::unique_ptr<cuda::Driver> driver_;
  std::map<uintptr_t, Mirror> mirrors_;
  std::unique_ptr<cuda::KernelBundle> bundle_;
  std::vector<MemRefArg> deviceArgs_;
  std::array<cuda::Event, 2> events_{};
  int64_t launchesPerCall_ = 0, launches_ = 0;
  double transfer_ = 0, deviceSeconds_ = 0;
};

/// Writes the bundle into `dir` (created) as `inkling-gpu-write-kernels` would.
bool writeBundle(const KernelBundle &files, const std::string &dir,
                 std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "--kernels-dir=" + dir + ": " + ec.message();
    return false;
  }
  auto write = [&](const std::string &file, const std::string &bytes) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      error = "--kernels-dir: cannot write " + path.str().str() + ": " +
              ec.message();
    else
      os << bytes;
    return !ec;
  };
  for (const KernelObject &object : files.objects)
    if (!write(object.file, object.bytes))
      return false;
  return write("manifest.json", files.manifest);
}

/// Reads the bundle in `dir`: manifest.json and every file it names.
bool readBundle(const std::string &dir, KernelBundle &files,
                std::string &error) {
  auto read = [&](const std::string &file, std::string &bytes) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, file);
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      error = "--kernels-from: cannot read " + path.str().str() + ": " +
              buffer.getError().message();
      return false;
    }
    bytes = (*buffer)->getBuffer().str();
    return true;
  };
  if (!read("manifest.json", files.manifest))
    return false;
  auto manifest = KernelManifest::parse(files.manifest);
  if (!manifest) {
    error = "--kernels-from=" + dir + ": " + manifest.status().message();
    return false;
  }
  for (const KernelSpec &kernel : manifest->kernels)
    for (const std::string &file : {kernel.file, kernel.hostForm})
      if (!file.empty() && !files.find(file)) {
        files.objects.push_back({file, ""});
        if (!read(file, files.objects.back().bytes))
          return false;
      }
  return true;
}

} // namespace

std::unique_ptr<Executor>
run::createGpuExecutor(exec::LayerProgram &program,
                       const GpuExecutorOptions &options, std::string &error) {
  auto driver = cuda::Driver::load(options.driverLibrary);
  if (!driver) {
    error = "--device=gpu: " + driver.status().message();
    return nullptr;
  }
  int capability = (*driver)->computeCapability();
  exec::KernelTarget target;
  target.chip =
      options.chip.empty() ? "sm_" + std::to_string(capability) : options.chip;

  KernelBundle files;
  if (!options.kernelsFrom.empty()) {
    if (!readBundle(options.kernelsFrom, files, error))
      return nullptr;
  } else {
    auto compiled = program.compileKernels(options.compile, target);
    if (!compiled) {
      error = llvm::toString(compiled.takeError());
      return nullptr;
    }
    files = std::move(*compiled);
  }
  if (!options.kernelsDir.empty() &&
      !writeBundle(files, options.kernelsDir, error))
    return nullptr;

  auto executor = std::make_unique<GpuExecutor>(program, std::move(*driver));
  if (Status s = executor->load(files); !s) {
    error = "--device=gpu: cannot load the kernels (" + target.chip + ") on " +
            executor->description() + ": " + s.message();
    return nullptr;
  }
  return executor;
}
