// Request and response of a callback RPC on a reused protobuf Arena (fewer
// allocations per heartbeat). Profiled under thousands of NMs with short
// containers, the RM's strand spent a large share of its time in malloc
// (_int_malloc, malloc_consolidate, unlink_chunk), mostly building replies:
// every Container, token string and acknowledged id of a NodeHeartbeat or
// Allocate response was its own heap object, freed again after the reply was
// written. With this allocator (registered through the generated
// SetMessageAllocatorFor_<Method>), both messages of a call live on one
// Arena whose first block is kept with its holder, and released holders are
// pooled: a call whose messages fit in `block_bytes` allocates nothing, a
// larger one only its arena's extra blocks.
//
// Contract: gRPC calls AllocateMessages() once per call and Release() on the
// holder when the call is done; Release() clears the arena (destroying both
// messages) and pools the holder, or frees it beyond `max_pooled`. Messages
// never outlive their call. The allocator must outlive every call (the
// server is shut down first) and frees its pooled holders when destroyed.
//
// Thread-safety: AllocateMessages() and Release() from any thread.
#pragma once

#include <google/protobuf/arena.h>
#include <grpcpp/support/message_allocator.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>
#include "common/mutex.h"

namespace morpheus::rm {

template <typename Req, typename Resp>
class ArenaMessageAllocator final : public grpc::MessageAllocator<Req, Resp> {
 public:
  // `block_bytes` > 0: each holder's kept first arena block (later blocks
  // grow up to 64 KiB and are freed at Release). `max_pooled`: released
  // holders kept for reuse (memory kept: about max_pooled x block_bytes).
  ArenaMessageAllocator(size_t block_bytes, size_t max_pooled)
      : block_bytes_(block_bytes), max_pooled_(max_pooled) {}
  ~ArenaMessageAllocator() override {
    for (Holder* h : free_) delete h;
  }
  ArenaMessageAllocator(const ArenaMessageAllocator&) = delete;
  ArenaMessageAllocator& operator=(const ArenaMessageAllocator&) = delete;

  grpc::MessageHolder<Req, Resp>* AllocateMessages() override {
    {
      MutexLock lk(mu_);
      if (!free_.empty()) {
        Holder* h = free_.back();
        free_.pop_back();
        return h;
      }
      created_++;
    }
    return new Holder(*this);
  }

  // Holders ever created (not reused from the pool); for tests and tuning.
  size_t created() const {
    MutexLock lk(mu_);
    return created_;
  }
  size_t pooled() const {
    MutexLock lk(mu_);
    return free_.size();
  }

 private:
  class Holder final : public grpc::MessageHolder<Req, Resp> {
   public:
    explicit Holder(ArenaMessageAllocator& owner)
        : owner_(owner),
          block_(new char[owner.block_bytes_]),
          arena_(options(block_.get(), owner.block_bytes_)) {
      create();
    }
    void Release() override { owner_.recycle(this); }
    // Destroys both messages and every arena block but the kept first one.
    void clear() {
      arena_.Reset();
      create();
    }

   private:
    static google::protobuf::ArenaOptions options(char* block, size_t size) {
      google::protobuf::ArenaOptions o;
      o.initial_block = block;
      o.initial_block_size = size;
      o.max_block_size = 64 * 1024;
      return o;
    }
    void create() {
      this->set_request(google::protobuf::Arena::CreateMessage<Req>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Resp>(&arena_));
    }

    ArenaMessageAllocator& owner_;
    std::unique_ptr<char[]> block_;  // before arena_: the arena's first block
    google::protobuf::Arena arena_;
  };

  void recycle(Holder* h) {
    h->clear();
    {
      MutexLock lk(mu_);
      if (free_.size() < max_pooled_) {
        free_.push_back(h);
        return;
      }
    }
    delete h;
  }

  const size_t block_bytes_;
  const size_t max_pooled_;
  mutable Mutex mu_;
  std::vector<Holder*> free_ GUARDED_BY(mu_);
  size_t created_ GUARDED_BY(mu_) = 0;
};

}  // namespace morpheus::rm
