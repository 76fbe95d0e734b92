#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "precision_probe/modes.hpp"

namespace pp = precision_probe;
using pp::Mode;

TEST(Modes, KeysRoundTrip) {
  for (Mode m : pp::all_modes()) {
    const auto parsed = pp::parse_mode(pp::mode_key(m));
    ASSERT_TRUE(parsed.has_value()) << pp::mode_key(m);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_FALSE(pp::parse_mode("fp7").has_value());
  EXPECT_FALSE(pp::parse_mode("FP16").has_value());  // keys are exact; lists are case-folded
}

TEST(Modes, Fp8ExpandsToBothKeysAndDuplicatesAreDropped) {
  const auto r = pp::parse_mode_list("bf16, FP8 ,fp8_e4m3,bf16");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, (std::vector<Mode>{Mode::bf16, Mode::fp8_e4m3, Mode::fp8_e5m2}));
}

TEST(Modes, AmpExpandsToBothAmpModes) {
  const auto r = pp::parse_mode_list("amp");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(*r, (std::vector<Mode>{Mode::amp_fp16, Mode::amp_bf16}));
}

TEST(Modes, BadListsNameTheProblem) {
  const auto refusal = [](std::string_view text) {
    const auto r = pp::parse_mode_list(text);
    return r ? std::string("accepted") : r.error();
  };
  EXPECT_NE(refusal("fp7").find("unknown mode 'fp7'"), std::string::npos);
  EXPECT_NE(refusal("bf16,,fp16").find("empty entry"), std::string::npos);
  EXPECT_EQ(refusal(""), "empty mode list");
  EXPECT_EQ(refusal("  "), "empty mode list");
  // Control characters in user input are escaped, never echoed raw.
  EXPECT_NE(refusal("bf\x1b[31m").find("\\x1b"), std::string::npos);
}

TEST(Modes, TheTableIsInTheEnumsOrderAndEveryRowIsWhole) {
  for (std::size_t i = 0; i < pp::kModeTable.size(); ++i) {
    const pp::ModeInfo& row = pp::kModeTable[i];
    EXPECT_EQ(static_cast<std::size_t>(row.mode), i) << row.key;
    EXPECT_EQ(&pp::mode_info(row.mode), &row);
    EXPECT_FALSE(row.key.empty());
    // Exact only for integers; every float mode has a rounding budget.
    EXPECT_EQ(row.tolerance == 0.0, row.mode == Mode::int8) << row.key;
    EXPECT_FALSE(row.gpu.native[0].empty()) << row.key;
    EXPECT_TRUE(row.gpu.otherwise != pp::Hardware::native || row.gpu.native[0].from.major <= 1)
        << row.key;
    for (const pp::CcSpan& span : row.gpu.native) {
      EXPECT_TRUE(span.empty() || !(span.to < span.from)) << row.key;
    }
    EXPECT_EQ(row.torch.runs_on[0].empty(), row.torch.why_not.empty()) << row.key;
    EXPECT_EQ(row.torch.runs_on[0].empty(), row.torch.through.major == 0) << row.key;
    EXPECT_FALSE(row.api.empty()) << row.key;
    EXPECT_EQ(row.cpu == pp::CpuNeeds::unavailable, !row.cpu_why.empty()) << row.key;
  }
  EXPECT_EQ(pp::matmul_modes().size() + pp::training_modes().size(), pp::all_modes().size());
  EXPECT_DOUBLE_EQ(pp::smoke_tolerance(Mode::bf16), 1e-2);
  EXPECT_DOUBLE_EQ(pp::amp_loss_tolerance(Mode::amp_fp16), 0.02);
}

// The report's schema lists the modes a consumer may meet: the table's, each where it belongs.
TEST(Modes, TheSchemaListsTheTablesModes) {
  std::ifstream in(PP_SOURCE_DIR "/docs/report.schema.json");
  ASSERT_TRUE(in);
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto keys = [](const std::vector<Mode>& modes) {
    std::vector<std::string> out;
    for (Mode m : modes) out.emplace_back(pp::mode_key(m));
    return out;
  };
  const nlohmann::json& defs = schema.at("definitions");
  EXPECT_EQ(defs.at("mode").at("enum").get<std::vector<std::string>>(), keys(pp::all_modes()));
  const nlohmann::json& device = defs.at("device").at("properties");
  for (const char* section : {"precisions", "bench"}) {
    EXPECT_EQ(device.at(section).at("propertyNames").at("enum").get<std::vector<std::string>>(),
              keys(pp::matmul_modes()))
        << section;
  }
  EXPECT_EQ(device.at("amp").at("propertyNames").at("enum").get<std::vector<std::string>>(),
            keys(pp::training_modes()));
}

// The status table: rows in the enum's order, every key distinct, a node rank each (failed first,
// native last), and the schema's status enum is the table's keys.
TEST(Modes, TheStatusTableIsInTheEnumsOrderAndTheSchemaListsIt) {
  std::vector<std::string> keys;
  std::vector<int> ranks;
  for (std::size_t i = 0; i < pp::kStatuses.size(); ++i) {
    const pp::StatusInfo& row = pp::kStatuses[i];
    EXPECT_EQ(static_cast<std::size_t>(row.status), i) << row.key;
    EXPECT_EQ(pp::to_string(row.status), row.key);
    keys.emplace_back(row.key);
    ranks.push_back(row.node_rank);
  }
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(std::adjacent_find(ranks.begin(), ranks.end()), ranks.end())
      << "two statuses rank alike";
  EXPECT_EQ(pp::status_info(pp::Status::failed).node_rank, ranks.front());
  EXPECT_EQ(pp::status_info(pp::Status::native).node_rank, ranks.back());
  std::ifstream in(PP_SOURCE_DIR "/docs/report.schema.json");
  ASSERT_TRUE(in);
  const nlohmann::json schema = nlohmann::json::parse(in);
  EXPECT_EQ(schema.at("definitions").at("status").at("enum").get<std::vector<std::string>>(), keys);
}

// What a LibTorch lacks for a mode: its release first (the C ABI the engine calls it through),
// then (on GPUs) the CUDA it was built with.
TEST(Modes, WhatALibTorchLacksIsSaidFromTheTable) {
  EXPECT_EQ(pp::missing_for(Mode::bf16, {2, 9}, std::nullopt), "");
  EXPECT_EQ(pp::missing_for(Mode::bf16, {1, 13}, std::nullopt),
            "this LibTorch (1.13) cannot run the bf16 check (aten::mm) through its stable C ABI: "
            "upgrade to LibTorch (PyTorch) 2.9 or later");
  EXPECT_EQ(pp::missing_for(Mode::fp8_e4m3, {2, 9}, pp::Version{12, 8}), "");
  EXPECT_NE(pp::missing_for(Mode::fp8_e4m3, {2, 9}, pp::Version{11, 7}).find("CUDA 11.8+"),
            std::string::npos);
  // The block-scaled formats need the e8m0 and packed FP4 dtypes the C ABI has from 2.11.
  EXPECT_NE(pp::missing_for(Mode::nvfp4, {2, 10}, pp::Version{13, 0})
                .find("cannot run the nvfp4 check (aten::_scaled_mm_v2) through its stable C ABI: "
                      "upgrade to LibTorch (PyTorch) 2.11 or later"),
            std::string::npos);
  EXPECT_NE(
      pp::missing_for(Mode::nvfp4, {2, 11}, pp::Version{12, 6}).find("nvfp4 needs CUDA 12.8+"),
      std::string::npos);
  EXPECT_EQ(pp::missing_for(Mode::nvfp4, {2, 11}, pp::Version{13, 0}), "");
  EXPECT_EQ(pp::missing_for(Mode::mxfp8, {2, 11}, std::nullopt), "");  // a CPU check: no CUDA
  EXPECT_NE(pp::missing_for(Mode::mxfp4, {2, 10}, std::nullopt).find("2.11 or later"),
            std::string::npos);
  // Block-wise FP8 on Hopper needs the cuBLASLt of CUDA 12.9.
  EXPECT_NE(
      pp::missing_for(Mode::fp8_blockwise, {2, 11}, pp::Version{12, 8}, pp::ComputeCapability{9, 0})
          .find("CUDA 12.9"),
      std::string::npos);
  EXPECT_EQ(pp::missing_for(Mode::fp8_blockwise, {2, 11}, pp::Version{13, 0},
                            pp::ComputeCapability{9, 0}),
            "");
}

// LibTorch's own architecture checks: the layer is named, with the version it was read from.
TEST(Modes, ARecipeTheHardwareHasAndLibTorchRefusesSaysSo) {
  const std::string b200 = pp::missing_for(Mode::fp8_blockwise, {2, 11}, pp::Version{13, 0},
                                           pp::ComputeCapability{10, 0});
  EXPECT_NE(b200.find("cc 10.0"), std::string::npos) << b200;
  EXPECT_NE(b200.find("_check_deepseek_support"), std::string::npos) << b200;
  EXPECT_NE(b200.find("LibTorch 2.11"), std::string::npos) << b200;
  const std::string rtx =
      pp::missing_for(Mode::mxfp4, {2, 11}, pp::Version{13, 0}, pp::ComputeCapability{12, 0});
  EXPECT_NE(rtx.find("only on cc 10.x"), std::string::npos) << rtx;
  EXPECT_EQ(pp::missing_for(Mode::mxfp4, {2, 11}, pp::Version{13, 0}, pp::ComputeCapability{10, 3}),
            "");
  // Row-wise fp8 has no architecture check of LibTorch's own (its kernels cover 8.9 to 12.x).
  EXPECT_EQ(
      pp::missing_for(Mode::fp8_rowwise, {2, 11}, pp::Version{13, 0}, pp::ComputeCapability{12, 0}),
      "");
  // A rule read from LibTorch up to 2.11 is not applied to a newer one: its smoke test decides.
  EXPECT_EQ(pp::missing_for(Mode::fp8_blockwise, {2, 12}, pp::Version{13, 0},
                            pp::ComputeCapability{10, 0}),
            "");
}

// "fp8" keeps meaning the per-tensor pair (gates written before the scaled recipes must not start
// failing); "fp4" is NVFP4's old name; the help lists both.
TEST(Modes, Fp8StaysThePairAndFp4IsNvfp4) {
  EXPECT_EQ(*pp::parse_mode_list("fp8"), (std::vector<Mode>{Mode::fp8_e4m3, Mode::fp8_e5m2}));
  EXPECT_EQ(*pp::parse_mode_list("fp4"), (std::vector<Mode>{Mode::nvfp4}));
  EXPECT_EQ(*pp::parse_mode_list("FP4,nvfp4,int8"), (std::vector<Mode>{Mode::nvfp4, Mode::int8}));
  const std::string keys = pp::accepted_mode_keys();
  EXPECT_NE(keys.find("fp8 (fp8_e4m3 and fp8_e5m2)"), std::string::npos) << keys;
  EXPECT_NE(keys.find("fp4 (nvfp4)"), std::string::npos) << keys;
  EXPECT_NE(keys.find("fp8_blockwise, mxfp8, nvfp4, mxfp4, int8"), std::string::npos) << keys;
}
