// GoogleTest helpers for Status/StatusOr (test code only).
#pragma once

#include <gtest/gtest.h>

#include "kiln/base/status.h"

// Fails the test (and returns) when `expr` (Status or StatusOr) is not OK.
#define KILN_ASSERT_OK(expr)                                                  \
  do {                                                                        \
    ::kiln::Status kiln_test_status_ = ::kiln::internal::AsStatus((expr));    \
    ASSERT_TRUE(kiln_test_status_.ok()) << #expr << ": " << kiln_test_status_.ToString(); \
  } while (0)

#define KILN_EXPECT_OK(expr)                                                  \
  do {                                                                        \
    ::kiln::Status kiln_test_status_ = ::kiln::internal::AsStatus((expr));    \
    EXPECT_TRUE(kiln_test_status_.ok()) << #expr << ": " << kiln_test_status_.ToString(); \
  } while (0)

#define KILN_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)                   \
  auto tmp = (expr);                                                     \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString();     \
  lhs = std::move(tmp).value()

// lhs = value of the StatusOr `expr`, or fail the test (and return).
#define KILN_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  KILN_ASSERT_OK_AND_ASSIGN_IMPL(KILN_STATUS_CONCAT(kiln_test_or_, __LINE__), lhs, expr)
