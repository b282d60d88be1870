// SPDX-License-Identifier: Apache-2.0
// ringio/http/query_params.hpp — the name=value pairs of a query string
// (application/x-www-form-urlencoded, as browsers send forms with GET):
//
//   http::query_params q(req.query());
//   for (const http::query_param& p : q) use(p.name, p.value);
//   std::string_view page = q.find("page").value_or("1");
//
// Pairs are separated by '&'; empty pieces ("a=1&&b=2", a trailing '&') are skipped. A
// piece without '=' is a name with an empty value ("flag"); the first '=' separates
// name and value, later ones belong to the value ("a=b=c": "a", "b=c"). Repeated names
// are all kept, in order. In names and values '+' is a space and "%XX" the byte it
// stands for ("%2B" is '+'); a '%' that starts no valid escape ("%zz", "%4", a final
// '%') is kept as it is and the pair is marked `malformed`. Decoded text may hold any
// byte, NUL included.
//
// Decoding is lazy and allocates nothing: each pair is decoded when the iteration
// reaches it, into the scratch buffer at the pair's own offset (decoding never
// lengthens text), so the views of every pair stay valid together for as long as the
// buffer does. The constructor without a scratch buffer owns one the size of the query
// (one allocation when the query is longer than 15 bytes).
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ringio::http {

/// One decoded pair of a query.
struct query_param {
  std::string_view name;   ///< the decoded name
  std::string_view value;  ///< the decoded value; empty when the pair had no '='

  /// A '%' in the pair started no valid escape and was kept literally.
  bool malformed = false;
};

/// The pairs of a query string (see the top of this file).
class query_params {
 public:
  /// Reads `query` (without its '?', as request::query() gives it), decoding into
  /// `scratch`, which must hold at least query.size() bytes (std::invalid_argument
  /// otherwise). Both must outlive this object and the views it hands out. Not an
  /// asynchronous operation: nothing to cancel.
  query_params(std::string_view query, std::span<char> scratch);
  /// Reads `query`, decoding into a buffer of its own. `query` must outlive this
  /// object; the views it hands out live as long as this object. Allocates once when
  /// the query is longer than 15 bytes; throws std::bad_alloc when that fails.
  explicit query_params(std::string_view query);
  /// Not copyable: the views it hands out point into its buffer.
  query_params(const query_params&) = delete;
  /// Not assignable, for the same reason.
  query_params& operator=(const query_params&) = delete;

  /// Walks the pairs in order, decoding each as it is reached.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;  ///< a forward iterator
    using value_type = query_param;                       ///< a decoded pair
    using difference_type = std::ptrdiff_t;               ///< as for any iterator
    using pointer = const query_param*;                   ///< to the current pair
    using reference = const query_param&;                 ///< to the current pair

    /// The end position.
    iterator() noexcept = default;
    /// The current pair.
    reference operator*() const noexcept { return current_; }
    /// The current pair.
    pointer operator->() const noexcept { return &current_; }
    /// Moves to the next pair.
    iterator& operator++() noexcept {
      advance(next_);
      return *this;
    }
    /// Moves to the next pair, returning the position before.
    iterator operator++(int) noexcept {
      iterator before = *this;
      ++*this;
      return before;
    }
    /// Whether both are at the same pair.
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

   private:
    friend class query_params;
    iterator(std::string_view query, char* scratch, std::size_t from) noexcept : query_(query), scratch_(scratch) {
      advance(from);
    }
    void advance(std::size_t from) noexcept;

    std::string_view query_;
    char* scratch_ = nullptr;
    std::size_t at_ = std::string_view::npos;  // where the current pair starts; npos at the end
    std::size_t next_ = 0;                     // where the piece after it starts
    query_param current_;
  };

  /// The first pair.
  [[nodiscard]] iterator begin() const noexcept { return {query_, scratch_, 0}; }
  /// Past the last pair.
  [[nodiscard]] iterator end() const noexcept { return {}; }
  /// The decoded value of the first pair whose decoded name is `name`; nullopt when
  /// there is none. Decodes the pairs before it, allocating nothing.
  [[nodiscard]] std::optional<std::string_view> find(std::string_view name) const noexcept;

 private:
  std::string_view query_;
  std::string own_;
  char* scratch_;
};

}  // namespace ringio::http
