// ConvDesc from HLO convolutions and its validation, without a GPU (label cpu): which dim_labels
// (in physical order, after layouts) cuDNN runs directly, the padding rule, groups, errors.
#include "kiln/cuda/libs/conv_desc.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda::libs {
namespace {

// Parses "ENTRY e { x = ...; w = ...; ROOT c = convolution(x, w), ... }" and describes the root.
StatusOr<ConvDesc> FromHlo(const std::string& x, const std::string& w, const std::string& conv) {
  std::string text = "HloModule m\nENTRY e {\n  x = " + x + " parameter(0)\n  w = " + w +
                     " parameter(1)\n  ROOT c = " + conv + "\n}\n";
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
  return ConvDescFromHlo(*module->entry_computation()->root_instruction());
}

TEST(ConvDescTest, ChannelsLastFromHlo) {
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc d,
      FromHlo("bf16[8,32,32,16]", "bf16[64,3,3,16]",
              "bf16[8,16,16,64] convolution(x, w), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
              "dim_labels=b01f_o01i->b01f"));
  EXPECT_EQ(d.kind, ConvKind::kForward);
  EXPECT_EQ(d.dtype, PrimitiveType::kBF16);
  EXPECT_EQ(d.input_layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(d.filter_layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(d.output_layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(d.batch, 8);
  EXPECT_EQ(d.input_features, 16);
  EXPECT_EQ(d.output_features, 64);
  EXPECT_EQ(d.input_spatial, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(d.filter_spatial, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(d.output_spatial, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(d.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(d.padding_low, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(d.InputDims(), (std::vector<int64_t>{8, 32, 32, 16}));
  EXPECT_EQ(d.FilterDims(), (std::vector<int64_t>{64, 3, 3, 16}));
  EXPECT_EQ(d.OutputDims(), (std::vector<int64_t>{8, 16, 16, 64}));
  EXPECT_EQ(d.ToString(),
            "conv forward bf16 xNHWC[8,32,32,16] wNHWC[64,3,3,16] yNHWC[8,16,16,64] stride=2x2 "
            "pad=1_1x1_1");
}

TEST(ConvDescTest, ChannelsFirstWithGroupsDilationAndPrecision) {
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc d,
      FromHlo("f32[2,8,10,12]", "f32[6,4,3,3]",
              "f32[2,6,6,8] convolution(x, w), window={size=3x3 rhs_dilate=2x2}, "
              "dim_labels=bf01_oi01->bf01, feature_group_count=2, "
              "operand_precision={highest,default}"));
  EXPECT_EQ(d.input_layout, ConvLayout::kChannelsFirst);
  EXPECT_EQ(d.feature_group_count, 2);
  EXPECT_EQ(d.dilations, (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(d.strides.empty());
  EXPECT_TRUE(d.padding_low.empty());
  EXPECT_EQ(d.precision, Precision::kHighest);
  EXPECT_EQ(d.FilterDims(), (std::vector<int64_t>{6, 4, 3, 3}));
}

TEST(ConvDescTest, OneAndThreeSpatialDimensions) {
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc d1, FromHlo("f16[4,100,8]", "f16[16,5,8]",
                           "f16[4,96,16] convolution(x, w), window={size=5}, dim_labels=b0f_o0i->b0f"));
  EXPECT_EQ(d1.spatial_dims(), 1);
  EXPECT_EQ(ConvLayoutName(d1.input_layout, 1), "NWC");
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc d3,
      FromHlo("f32[1,4,6,6,6]", "f32[8,4,3,3,3]",
              "f32[1,8,6,6,6] convolution(x, w), window={size=3x3x3 pad=1_1x1_1x1_1}, "
              "dim_labels=bf012_oi012->bf012"));
  EXPECT_EQ(d3.spatial_dims(), 3);
  EXPECT_EQ(ConvLayoutName(d3.input_layout, 3), "NCDHW");
}

TEST(ConvDescTest, LayoutsMapDimLabelsToPhysicalOrder) {
  // Logically bf01 / oi01, but the layouts make every tensor physically channels-last.
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc d,
      FromHlo("f32[2,3,5,5]{1,3,2,0}", "f32[4,3,3,3]{1,3,2,0}",
              "f32[2,4,3,3]{1,3,2,0} convolution(x, w), window={size=3x3}, "
              "dim_labels=bf01_oi01->bf01"));
  EXPECT_EQ(d.input_layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(d.filter_layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(d.InputDims(), (std::vector<int64_t>{2, 5, 5, 3}));
}

TEST(ConvDescTest, UnsupportedLabelsNameTheFix) {
  // JAX's default NHWC/HWIO convolution: the filter needs a transpose.
  StatusOr<ConvDesc> d =
      FromHlo("f32[1,8,8,3]", "f32[3,3,3,16]",
              "f32[1,6,6,16] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(d.status().message().find("b01f_01io->b01f"), std::string::npos)
      << d.status().message();
  EXPECT_NE(d.status().message().find("b01f_o01i->b01f"), std::string::npos);
  EXPECT_NE(d.status().message().find("filter"), std::string::npos);

  // Spatial dimensions out of order.
  d = FromHlo("f32[1,8,9,3]", "f32[16,3,3,3]",
              "f32[1,7,6,16] convolution(x, w), window={size=3x3}, dim_labels=b10f_o01i->b01f");
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << d.status().ToString();

  // Mixed layouts.
  d = FromHlo("f32[1,3,8,8]", "f32[16,3,3,3]",
              "f32[1,6,6,16] convolution(x, w), window={size=3x3}, dim_labels=bf01_o01i->b01f");
  EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented) << d.status().ToString();
}

TEST(ConvDescTest, PaddingRule) {
  // 'SAME' with a 2x2 window: 0_1 gives the same windows as cuDNN's 0_0 (the extra row is
  // never read).
  KILN_ASSERT_OK_AND_ASSIGN(
      ConvDesc ok, FromHlo("f32[1,4,4,1]", "f32[1,2,2,1]",
                           "f32[1,2,2,1] convolution(x, w), window={size=2x2 stride=2x2 "
                           "pad=0_1x0_1}, dim_labels=b01f_o01i->b01f"));
  EXPECT_EQ(ok.padding_high, (std::vector<int64_t>{1, 1}));
  // 1_0 cannot be expressed as symmetric padding.
  StatusOr<ConvDesc> bad =
      FromHlo("f32[1,4,4,1]", "f32[1,3,3,1]",
              "f32[1,3,3,1] convolution(x, w), window={size=3x3 pad=1_0x1_0}, "
              "dim_labels=b01f_o01i->b01f");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bad.status().message().find("pad the input explicitly"), std::string::npos)
      << bad.status().message();
  // lhs dilation (the raw backward-data form) is not a forward convolution for cuDNN.
  bad = FromHlo("f32[1,4,4,1]", "f32[1,3,3,1]",
                "f32[1,9,9,1] convolution(x, w), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, "
                "dim_labels=b01f_o01i->b01f");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnimplemented) << bad.status().ToString();
}

ConvDesc Small() {
  ConvDesc d;
  d.batch = 2;
  d.input_features = 4;
  d.output_features = 8;
  d.input_spatial = {6, 6};
  d.filter_spatial = {3, 3};
  d.output_spatial = {4, 4};
  return d;
}

TEST(ConvDescTest, Validation) {
  KILN_EXPECT_OK(ValidateConvDesc(Small()));
  ConvDesc d = Small();
  d.output_spatial = {5, 4};
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kInvalidArgument);
  d = Small();
  d.feature_group_count = 3;
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kInvalidArgument);
  d = Small();
  d.dtype = PrimitiveType::kS8;
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kUnimplemented);
  d = Small();
  d.activation = ConvActivation::kRelu;  // relu without bias: the split epilogue runs it
  KILN_EXPECT_OK(ValidateConvDesc(d));
  d.dtype = PrimitiveType::kF64;  // f64 too
  KILN_EXPECT_OK(ValidateConvDesc(d));
  d.dtype = PrimitiveType::kF32;
  d.has_bias = true;
  KILN_EXPECT_OK(ValidateConvDesc(d));
  d.kind = ConvKind::kBackwardData;
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kUnimplemented);
  d = Small();
  d.strides = {1};
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kInvalidArgument);
  d = Small();
  d.input_spatial = {6, 6, 6, 6};
  EXPECT_EQ(ValidateConvDesc(d).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::cuda::libs
