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
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.modes, (std::vector<Mode>{Mode::bf16, Mode::fp8_e4m3, Mode::fp8_e5m2}));
}

TEST(Modes, AmpExpandsToBothAmpModes) {
  const auto r = pp::parse_mode_list("amp");
  ASSERT_TRUE(r.error.empty());
  EXPECT_EQ(r.modes, (std::vector<Mode>{Mode::amp_fp16, Mode::amp_bf16}));
}

TEST(Modes, BadListsNameTheProblem) {
  EXPECT_NE(pp::parse_mode_list("fp7").error.find("unknown mode 'fp7'"), std::string::npos);
  EXPECT_NE(pp::parse_mode_list("bf16,,fp16").error.find("empty entry"), std::string::npos);
  EXPECT_NE(pp::parse_mode_list("").error.find("empty"), std::string::npos);
  EXPECT_NE(pp::parse_mode_list("  ").error.find("empty"), std::string::npos);
  // Control characters in user input are escaped, never echoed raw.
  EXPECT_NE(pp::parse_mode_list("bf\x1b[31m").error.find("\\x1b"), std::string::npos);
}

TEST(Modes, TheTableIsInTheEnumsOrderAndEveryRowIsWhole) {
  for (std::size_t i = 0; i < pp::kModeTable.size(); ++i) {
    const pp::ModeInfo& row = pp::kModeTable[i];
    EXPECT_EQ(static_cast<std::size_t>(row.mode), i) << row.key;
    EXPECT_EQ(&pp::mode_info(row.mode), &row);
    EXPECT_FALSE(row.key.empty());
    EXPECT_GT(row.tolerance, 0.0) << row.key;
    EXPECT_TRUE(row.gpu.below != pp::Hardware::native || row.gpu.native_from.major <= 1) << row.key;
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

// What a LibTorch lacks for a mode: its version first, then (on GPUs) the CUDA it was built with.
TEST(Modes, WhatALibTorchLacksIsSaidFromTheTable) {
  EXPECT_EQ(pp::missing_for(Mode::bf16, {1, 13}, std::nullopt), "");
  EXPECT_NE(pp::missing_for(Mode::fp8_e4m3, {1, 13}, pp::Version{12, 1}).find("needs 2.4+"),
            std::string::npos);
  EXPECT_EQ(pp::missing_for(Mode::fp8_e4m3, {2, 4}, pp::Version{12, 1}), "");
  EXPECT_NE(pp::missing_for(Mode::fp8_e4m3, {2, 4}, pp::Version{11, 7}).find("CUDA 11.8+"),
            std::string::npos);
  EXPECT_NE(pp::missing_for(Mode::fp4, {2, 9}, pp::Version{12, 6}).find("fp4 needs CUDA 12.8+"),
            std::string::npos);
  EXPECT_EQ(pp::missing_for(Mode::fp4, {2, 9}, pp::Version{13, 0}), "");
  EXPECT_EQ(pp::missing_for(Mode::fp4, {2, 9}, std::nullopt), "");  // a CPU check: no CUDA asked
}
