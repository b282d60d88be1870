// SPDX-License-Identifier: Apache-2.0
// ringio/detail/mpsc_ring.hpp — a bounded lock-free queue: any number of producer
// threads, one consumer. Each slot carries a sequence number telling whose turn it is
// (the classic bounded-queue design with per-cell sequence counters).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace ringio::detail {

template <class T>
class mpsc_ring {
 public:
  /// capacity is rounded up to a power of two.
  explicit mpsc_ring(std::size_t capacity) {
    std::size_t n = 2;
    while (n < capacity) n <<= 1;
    mask_ = n - 1;
    cells_ = std::make_unique<cell[]>(n);
    for (std::size_t i = 0; i < n; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  mpsc_ring(const mpsc_ring&) = delete;
  mpsc_ring& operator=(const mpsc_ring&) = delete;
  ~mpsc_ring() {
    while (try_pop()) {
    }
  }

  /// Any thread. False when full (v is left untouched).
  bool try_push(T& v) {
    std::size_t pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      std::size_t seq = c.seq.load(std::memory_order_acquire);
      auto diff = static_cast<std::ptrdiff_t>(seq) - static_cast<std::ptrdiff_t>(pos);
      if (diff == 0) {
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          ::new (static_cast<void*>(&c.storage)) T(std::move(v));
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // the slot still holds an element from a lap ago: full
      } else {
        pos = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  /// The consumer thread only.
  std::optional<T> try_pop() {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    cell& c = cells_[head & mask_];
    std::size_t seq = c.seq.load(std::memory_order_acquire);
    if (seq != head + 1) return std::nullopt;  // empty (or a producer is mid-write)
    T* p = std::launder(reinterpret_cast<T*>(&c.storage));
    std::optional<T> out(std::move(*p));
    p->~T();
    c.seq.store(head + mask_ + 1, std::memory_order_release);
    head_.store(head + 1, std::memory_order_relaxed);
    return out;
  }

  /// Values queued: exact on the consumer's thread with no push in progress, a
  /// snapshot otherwise (a push mid-write counts already).
  [[nodiscard]] std::size_t size() const noexcept {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return mask_ + 1; }

 private:
  struct cell {
    std::atomic<std::size_t> seq{0};
    alignas(T) unsigned char storage[sizeof(T)];
  };
  std::unique_ptr<cell[]> cells_;
  std::size_t mask_ = 0;
  alignas(64) std::atomic<std::size_t> tail_{0};
  alignas(64) std::atomic<std::size_t> head_{0};  // written by the consumer only
};

}  // namespace ringio::detail
