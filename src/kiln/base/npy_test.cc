#include "kiln/base/npy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kiln {
namespace {

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// Written by numpy 2.4 (np.savez_compressed, deflated members with zip64 local headers):
//   a = (np.arange(6, dtype='<f4').reshape(2, 3) / 4)
//   b = np.asfortranarray(np.array([[1, 2], [3, -4], [5, 6]], dtype='>i2'))
//   c = np.array([True, False, True])
//   d = np.array([1+2j], dtype='<c8')
//   e = np.array([1.5, -2], dtype=ml_dtypes.bfloat16)        # descr '<V2'
//   s = np.float64(3.25)                                      # 0-d
//   f = np.asfortranarray(np.arange(24, dtype='>f8').reshape(2, 3, 4))
constexpr std::string_view kNumpyNpz =
    "504b03042d0000000800000021000a9c00a4ffffffffffffffff05001400612e6e707901001000980000000000000056"
    "000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e9366a2aea3a09e965f54529498179f5f94920a"
    "12774bcc294e058a17672416a402f91a463a0ac69a3a0ab50a64032e063068b00312f60c0c0e40dc00c40bec01504b03"
    "042d0000000800000021000cdee537ffffffffffffffff05001400622e6e7079010010008c0000000000000051000000"
    "000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e9769a4aea3a09e965f54529498179f5f94920a120f29"
    "2a4d050a17672416a402b91ac63a0a469a3a0ab50ae4032e06460666065606a6ff7f18d800504b03042d000000080000"
    "00210016938cbbffffffffffffffff05001400632e6e707901001000830000000000000047000000000000009bec17ea"
    "1b10c9c850c650ad9e925a9c5ca46ea5a05e9364a8aea3a09e965f54529498179f5f94920a12774bcc294e058a176724"
    "16a402f91ac63a9a3a0ab50a14002e46064600504b03042d000000080000002100ade17663ffffffffffffffff050014"
    "00642e6e70790100100088000000000000004c000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e"
    "936ca1aea3a09e965f54529498179f5f94920a12774bcc294e058a17672416a402f91a863a9a3a0ab50a14002e068606"
    "7b0606060700504b03042d000000080000002100722c9b54ffffffffffffffff05001400652e6e707901001000840000"
    "000000000048000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e1366a4aea3a09e965f54529498"
    "179f5f94920a12774bcc294e058a17672416a402f91a463a9a3a0ab50a1400ae03f60c0700504b03042d000000080000"
    "002100bb99b90dffffffffffffffff05001400732e6e707901001000880000000000000047000000000000009bec17ea"
    "1b10c9c850c650ad9e925a9c5ca46ea5a06e9366a1aea3a09e965f54529498179f5f94920a12774bcc294e058a176724"
    "16a402f91a9a3a0ab50a14012e0630e0720000504b03042d000000080000002100c19935cbffffffffffffffff050014"
    "00662e6e707901001000400100000000000089000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e"
    "9766a1aea3a09e965f54529498179f5f94920a120f292a4d050a17672416a402b91a463a0ac63a0a269a3a0ab50a6402"
    "2e062870d080d20250da004a2b406913086dff01cad782d22250da104a2b416953280d335f074a4b40692328ad02a5cd"
    "a0340794d683d23250da184aab416973080d00504b01022d032d0000000800000021000a9c00a4560000009800000005"
    "0000000000000000000000800100000000612e6e7079504b01022d032d0000000800000021000cdee537510000008c00"
    "000005000000000000000000000080018d000000622e6e7079504b01022d032d00000008000000210016938cbb470000"
    "0083000000050000000000000000000000800115010000632e6e7079504b01022d032d000000080000002100ade17663"
    "4c00000088000000050000000000000000000000800193010000642e6e7079504b01022d032d00000008000000210072"
    "2c9b544800000084000000050000000000000000000000800116020000652e6e7079504b01022d032d00000008000000"
    "2100bb99b90d4700000088000000050000000000000000000000800195020000732e6e7079504b01022d032d00000008"
    "0000002100c19935cb8900000040010000050000000000000000000000800113030000662e6e7079504b050600000000"
    "0700070065010000d30300000000";

// np.lib.format.write_array(f, np.array([[7, 8, 9]], dtype='<u2'), version=(3, 0))
constexpr std::string_view kNpyV3 =
    "934e554d50590300740000007b276465736372273a20273c7532272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028312c2033292c207d20202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a070008000900";

// np.lib.format.write_array(f, np.array([-1, 2], dtype='>i8'), version=(2, 0))
constexpr std::string_view kNpyV2 =
    "934e554d50590200740000007b276465736372273a20273e6938272c2027666f727472616e5f6f72646572273a204661"
    "6c73652c20277368617065273a2028322c292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200affffffffffffffff0000000000000002";

template <typename T>
std::vector<T> Values(const NpyArray& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

const NpyArray& Member(const std::vector<NpzMember>& ms, std::string_view name) {
  for (const NpzMember& m : ms)
    if (m.name == name) return m.array;
  ADD_FAILURE() << "no member " << name;
  static NpyArray empty;
  return empty;
}

TEST(NpyTest, ReadsNumpyWrittenNpz) {
  auto ms = ParseNpz(FromHex(kNumpyNpz), "fixture.npz");
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  ASSERT_EQ(ms->size(), 7u);
  EXPECT_EQ((*ms)[0].name, "a");

  const NpyArray& a = Member(*ms, "a");
  EXPECT_EQ(a.dtype.Descr(), "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(a), (std::vector<float>{0, 0.25, 0.5, 0.75, 1, 1.25}));

  // Big-endian, Fortran order: normalized to little-endian C order.
  const NpyArray& b = Member(*ms, "b");
  EXPECT_EQ(b.dtype.Descr(), "<i2");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values<int16_t>(b), (std::vector<int16_t>{1, 2, 3, -4, 5, 6}));

  const NpyArray& c = Member(*ms, "c");
  EXPECT_EQ(c.dtype.Descr(), "|b1");
  EXPECT_EQ(c.data, (std::vector<uint8_t>{1, 0, 1}));

  const NpyArray& d = Member(*ms, "d");
  EXPECT_EQ(d.dtype.Descr(), "<c8");
  EXPECT_EQ(Values<float>(d), (std::vector<float>{1, 2}));

  // ml_dtypes bfloat16: raw bytes, 0x3fc0 = 1.5, 0xc000 = -2.
  const NpyArray& e = Member(*ms, "e");
  EXPECT_EQ(e.dtype.kind, 'V');
  EXPECT_EQ(e.dtype.itemsize, 2);
  EXPECT_EQ(Values<uint16_t>(e), (std::vector<uint16_t>{0x3fc0, 0xc000}));

  const NpyArray& s = Member(*ms, "s");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(Values<double>(s), (std::vector<double>{3.25}));

  const NpyArray& f = Member(*ms, "f");
  EXPECT_EQ(f.shape, (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> want(24);
  for (int i = 0; i < 24; ++i) want[i] = i;
  EXPECT_EQ(Values<double>(f), want);
}

TEST(NpyTest, ReadsVersion2And3Headers) {
  auto v3 = ParseNpy(FromHex(kNpyV3), "v3.npy");
  ASSERT_TRUE(v3.ok()) << v3.status().ToString();
  EXPECT_EQ(v3->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values<uint16_t>(*v3), (std::vector<uint16_t>{7, 8, 9}));
  auto v2 = ParseNpy(FromHex(kNpyV2), "v2.npy");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->dtype.Descr(), "<i8");
  EXPECT_EQ(Values<int64_t>(*v2), (std::vector<int64_t>{-1, 2}));
}

TEST(NpyTest, NpyRoundTripAndHeaderAlignment) {
  auto a = MakeNpyArray({'i', 4}, {2, 2}, std::string("\1\0\0\0\2\0\0\0\3\0\0\0\4\0\0\0", 16));
  ASSERT_TRUE(a.ok());
  std::string bytes = SerializeNpy(*a);
  // The header fills a multiple of 64 bytes and ends in '\n'; 16 bytes of data follow.
  EXPECT_EQ((bytes.size() - 16) % 64, 0u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes[bytes.size() - 17], '\n');
  auto back = ParseNpy(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->shape, a->shape);
  EXPECT_EQ(back->data, a->data);
  EXPECT_EQ(back->Describe(), "<i4 (2, 2)");

  // Scalars and 1-d shapes print as numpy writes them.
  auto scalar = MakeNpyArray({'f', 8}, {}, std::string(8, '\0'));
  ASSERT_TRUE(scalar.ok());
  EXPECT_NE(SerializeNpy(*scalar).find("'shape': (), "), std::string::npos);
  auto vec = MakeNpyArray({'u', 1}, {3}, "abc");
  ASSERT_TRUE(vec.ok());
  EXPECT_NE(SerializeNpy(*vec).find("'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
}

TEST(NpyTest, NpzRoundTripStoredAndZip64) {
  std::vector<NpzMember> ms;
  auto x = MakeNpyArray({'f', 4}, {2}, std::string("\0\0\x80\x3f\0\0\0\x40", 8));
  auto y = MakeNpyArray({'b', 1}, {0, 3}, "");
  ASSERT_TRUE(x.ok() && y.ok());
  ms.push_back({"out0", *x});
  ms.push_back({"out1", *y});
  for (bool force64 : {false, true}) {
    NpzWriteOptions opts;
    opts.force_zip64 = force64;
    std::string zip = SerializeNpz(ms, opts);
    auto back = ParseNpz(zip);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].name, "out0");
    EXPECT_EQ((*back)[0].array.data, x->data);
    EXPECT_EQ((*back)[1].name, "out1");
    EXPECT_EQ((*back)[1].array.shape, (std::vector<int64_t>{0, 3}));
    // The zip64 end records are there exactly when asked for (small archive).
    bool has_end64 = zip.find(std::string("PK\x06\x06", 4)) != std::string::npos;
    EXPECT_EQ(has_end64, force64);
  }
}

TEST(NpyTest, FileRoundTrip) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/kiln_npy_test.npz";
  auto x = MakeNpyArray({'c', 16}, {1}, std::string(16, '\x01'));
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(WriteNpzFile(path, {{"z", *x}}).ok());
  auto back = ReadNpzFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].array.data, x->data);
  EXPECT_FALSE(WriteNpzFile(path, {{"z", *x}, {"z", *x}}).ok());  // duplicate names
  std::filesystem::remove(path);
  EXPECT_EQ(ReadNpzFile(path).status().code(), StatusCode::kNotFound);
}

TEST(NpyTest, MalformedInputIsAnErrorNotACrash) {
  std::string good = FromHex(kNumpyNpz);
  // Truncations and single-byte corruptions anywhere: never a crash, mostly errors.
  for (size_t cut = 0; cut < good.size(); cut += 7) EXPECT_FALSE(ParseNpz(good.substr(0, cut)).ok());
  for (size_t i = 0; i < good.size(); i += 3) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    (void)ParseNpz(bad);  // must not crash; CRC-32 catches data corruption
  }
  std::string npy = FromHex(kNpyV3);
  EXPECT_FALSE(ParseNpy(npy.substr(0, npy.size() - 1)).ok());  // short data
  EXPECT_FALSE(ParseNpy(npy + "x").ok());                        // trailing data
  EXPECT_FALSE(ParseNpy("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}").ok());
  std::string dict = "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n";
  auto s = ParseNpy(std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("structured"), std::string::npos);
  EXPECT_FALSE(ParseNpyDescr("<U4").ok());
  EXPECT_FALSE(ParseNpyDescr("<f3").ok());
  EXPECT_FALSE(ParseNpyDescr("O").ok());
  bool big = false;
  ASSERT_TRUE(ParseNpyDescr(">c16", &big).ok());
  EXPECT_TRUE(big);
  ASSERT_TRUE(ParseNpyDescr(">u1", &big).ok());
  EXPECT_FALSE(big);
}

TEST(ReadFileToStringTest, OnlyFilesAndPipes) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  auto d = ReadFileToString(dir.string());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos);
  auto z = ReadFileToString("/dev/zero");  // would read forever
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("not a regular file"), std::string::npos);
  auto missing = ReadFileToString((dir / "kiln_no_such_file_here").string());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::string path = (dir / "kiln_read_file_test.txt").string();
  ASSERT_TRUE(WriteStringToFile(path, "abc").ok());
  auto ok = ReadFileToString(path);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "abc");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kiln
