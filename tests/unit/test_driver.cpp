#include <gtest/gtest.h>

#include "fakes.hpp"
#include "probe/driver/driver.hpp"
#include "strings/strings.hpp"

namespace pp = precision_probe;
using pp::testing::driver_with;
using pp::testing::FakeGpu;

namespace {
const std::vector<FakeGpu> kTwoGpus = {{"NVIDIA H200", {9, 0}, 132, 141},
                                       {"NVIDIA H200", {9, 0}, 132, 141}};
}

TEST(VisibleDevices, ParsesLikeCuda) {
  EXPECT_FALSE(pp::parse_cuda_visible_devices(std::nullopt).set);
  const auto empty = pp::parse_cuda_visible_devices(std::string(""));
  EXPECT_TRUE(empty.set);
  EXPECT_TRUE(empty.entries.empty());
  const auto list = pp::parse_cuda_visible_devices(std::string("1, 0,GPU-abc,MIG-def"));
  EXPECT_EQ(list.entries, (std::vector<std::string>{"1", "0", "GPU-abc", "MIG-def"}));
  // CUDA stops at the first invalid entry.
  const auto cut = pp::parse_cuda_visible_devices(std::string("0,-1,1"));
  EXPECT_EQ(cut.entries, (std::vector<std::string>{"0"}));
  EXPECT_EQ(cut.invalid_entry, "-1");
  const auto none = pp::parse_cuda_visible_devices(std::string("none"));
  EXPECT_TRUE(none.entries.empty());
  EXPECT_EQ(none.invalid_entry, "none");
}

TEST(DriverFacts, NoLibraryMeansNotFound) {
  auto d = pp::testing::no_driver();
  const auto facts = pp::merge_gpu_facts(d.nvml, d.cuda, {}, std::nullopt);
  EXPECT_EQ(facts.driver.status, pp::DriverStatus::not_found);
  EXPECT_TRUE(facts.gpus.empty());
  EXPECT_NE(facts.driver.message.find("libcuda.so.1"), std::string::npos);
}

TEST(DriverFacts, CudaIsAuthoritativeAndNvmlEnriches) {
  auto d = driver_with(kTwoGpus);
  const auto facts = pp::merge_gpu_facts(d.nvml, d.cuda, {}, std::nullopt);
  EXPECT_EQ(facts.driver.status, pp::DriverStatus::ok);
  EXPECT_EQ(facts.driver.version, "580.159.04");
  EXPECT_EQ(facts.driver.cuda_version, (pp::Version{13, 0}));
  ASSERT_EQ(facts.gpus.size(), 2U);
  EXPECT_EQ(facts.gpus[1].index, 1);
  EXPECT_EQ(facts.gpus[0].sm_count, 132);               // from CUDA
  EXPECT_TRUE(facts.gpus[0].memory_free.has_value());   // from NVML
  EXPECT_EQ(facts.gpus[0].pci_bus_id, "0000:17:00.0");  // NVML's 8-digit domain normalised
  EXPECT_EQ(facts.gpus[0].source, "cuda+nvml");
}

TEST(DriverFacts, NvmlAloneAppliesCudaVisibleDevices) {
  auto d = driver_with(kTwoGpus);
  const auto spec = pp::parse_cuda_visible_devices(std::string("1"));
  const auto facts = pp::merge_gpu_facts(d.nvml, std::nullopt, spec, std::nullopt);
  ASSERT_EQ(facts.gpus.size(), 1U);
  EXPECT_EQ(facts.gpus[0].uuid, d.nvml.devices[1].uuid);
  EXPECT_EQ(facts.gpus[0].index, 0);  // renumbered, as CUDA does
  EXPECT_TRUE(facts.order_is_reliable);
  // By UUID prefix.
  const auto by_uuid = pp::parse_cuda_visible_devices(d.nvml.devices[1].uuid.substr(0, 14));
  EXPECT_EQ(pp::merge_gpu_facts(d.nvml, std::nullopt, by_uuid, std::nullopt).gpus.size(), 1U);
  // An index that does not exist hides it and everything after it.
  const auto bad = pp::parse_cuda_visible_devices(std::string("7,0"));
  const auto none = pp::merge_gpu_facts(d.nvml, std::nullopt, bad, std::nullopt);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_EQ(none.driver.status, pp::DriverStatus::no_devices);
}

TEST(DriverFacts, MixedModelsOrMigMakeNvmlOrderUnreliable) {
  auto mixed = driver_with({{"NVIDIA A100", {8, 0}, 108, 80}, {"Tesla T4", {7, 5}, 40, 15}});
  EXPECT_FALSE(pp::merge_gpu_facts(mixed.nvml, std::nullopt, {}, std::nullopt).order_is_reliable);
  auto mig = driver_with({{"NVIDIA A100", {8, 0}, 108, 80}});
  mig.nvml.devices[0].mig_enabled = true;
  EXPECT_FALSE(pp::merge_gpu_facts(mig.nvml, std::nullopt, {}, std::nullopt).order_is_reliable);
  auto same = driver_with(kTwoGpus);
  EXPECT_TRUE(pp::merge_gpu_facts(same.nvml, std::nullopt, {}, std::nullopt).order_is_reliable);
}

TEST(DriverFacts, CuInitFailureIsReportedByName) {
  auto d = driver_with(kTwoGpus);
  d.cuda.init_result = 35;
  d.cuda.init_error_name = "CUDA_ERROR_INSUFFICIENT_DRIVER";
  d.cuda.init_error_string = "CUDA driver version is insufficient for CUDA runtime version";
  d.cuda.devices.clear();
  const auto facts = pp::merge_gpu_facts(d.nvml, d.cuda, {}, std::nullopt);
  EXPECT_EQ(facts.driver.status, pp::DriverStatus::init_failed);
  EXPECT_NE(facts.driver.message.find("CUDA_ERROR_INSUFFICIENT_DRIVER (35)"), std::string::npos);
  EXPECT_EQ(facts.driver.cu_init_result, 35);

  auto none = driver_with({});
  const auto no_device = pp::merge_gpu_facts(none.nvml, none.cuda, {}, std::nullopt);
  EXPECT_EQ(no_device.driver.status, pp::DriverStatus::no_devices);
}

TEST(DriverFacts, MigInstancesAreMatchedToTheirParentGpu) {
  auto d = driver_with({{"NVIDIA A100-SXM4-40GB", {8, 0}, 108, 40}});
  d.nvml.devices[0].mig_enabled = true;
  d.cuda.devices[0].name = "NVIDIA A100-SXM4-40GB MIG 1g.5gb";
  d.cuda.devices[0].uuid = "MIG-11111111-2222-3333-4444-555555555555";
  d.cuda.devices[0].sm_count = 14;
  const auto facts = pp::merge_gpu_facts(d.nvml, d.cuda, {}, std::nullopt);
  ASSERT_EQ(facts.gpus.size(), 1U);
  EXPECT_TRUE(facts.gpus[0].mig_instance);
  EXPECT_EQ(facts.gpus[0].mig_enabled, true);
  EXPECT_FALSE(
      facts.gpus[0].memory_free.has_value());  // the parent's free memory is not the instance's
}

TEST(DriverFacts, DriverVersionFallsBackToProc) {
  auto d = pp::testing::no_driver();
  const std::string proc =
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n";
  const auto facts = pp::merge_gpu_facts(d.nvml, d.cuda, {}, proc);
  EXPECT_EQ(facts.driver.version, "535.104.05");
}

TEST(DriverFacts, UuidFormatting) {
  const unsigned char bytes[16] = {0x8f, 0x3a, 0x2b, 0x1c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xb};
  EXPECT_EQ(pp::format_uuid(bytes, false), "GPU-8f3a2b1c-0001-0203-0405-060708090a0b");
  EXPECT_EQ(pp::format_uuid(bytes, true).substr(0, 4), "MIG-");
}

// The driver agent's snapshots go through the field layer, as the report does: each reads back
// as written (a compute capability as "9.0"), and what is not a whole snapshot is refused.
TEST(DriverWire, SnapshotsReadBackAsWritten) {
  auto d = driver_with(kTwoGpus);
  d.nvml.devices[0].processes.push_back({42, 1073741824, "python3"});
  d.nvml.devices[1].mig_enabled = true;
  d.cuda.peers.push_back({0, 1, true, 0, true});
  const std::string nvml = pp::encode_nvml_snapshot(d.nvml);
  const std::string cuda = pp::encode_cuda_snapshot(d.cuda);
  EXPECT_NE(nvml.find(R"("cc":"9.0")"), std::string::npos) << nvml;
  const pp::Expected<pp::NvmlSnapshot> nvml_read = pp::decode_nvml_snapshot(nvml);
  const pp::Expected<pp::CudaSnapshot> cuda_read = pp::decode_cuda_snapshot(cuda);
  ASSERT_TRUE(nvml_read) << nvml_read.error();
  ASSERT_TRUE(cuda_read) << cuda_read.error();
  const pp::NvmlSnapshot& nvml_back = *nvml_read;
  const pp::CudaSnapshot& cuda_back = *cuda_read;
  EXPECT_EQ(pp::encode_nvml_snapshot(nvml_back), nvml);
  EXPECT_EQ(pp::encode_cuda_snapshot(cuda_back), cuda);
  ASSERT_EQ(nvml_back.devices.size(), 2U);
  EXPECT_EQ(nvml_back.devices[0].cc, (pp::ComputeCapability{9, 0}));
  EXPECT_EQ(nvml_back.devices[0].processes.at(0).name, "python3");
  EXPECT_EQ(cuda_back.peers.size(), 1U);
  // Cut short, a field missing, a value of the wrong type: refused, saying what.
  const auto cut = pp::decode_nvml_snapshot(nvml.substr(0, nvml.size() / 2));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().find("at byte"), std::string::npos) << cut.error();
  const auto no_devices = pp::decode_cuda_snapshot(R"({"loaded":true})");
  ASSERT_FALSE(no_devices);
  EXPECT_EQ(no_devices.error(), "no \"devices\"");
  const auto wrong = pp::decode_cuda_snapshot(R"({"loaded":true,"devices":[{"cc":{"major":9}}]})");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error(), "devices[0].cc: expected a compute capability such as \"9.0\"");
}
