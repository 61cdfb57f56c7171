#pragma once
// Private helper of train/Checkpoint.cpp: a contiguous range of a stored array's row-major
// elements as an HDF5 selection, the layout-free checksum over such ranges, and which part of
// its elements a rank writes. Every rank writes its own part straight into the one file and
// reads only its own part, so no rank ever holds a tensor it does not hold in training.
//
// A stored array's elements follow its owner parameter's LOCAL layout (layers/Parameter.hpp):
// the whole tensor, row-major, for a replicated parameter; [rows, columns.size()] row-major with
// local column j at global column columns[j] for a column shard. A rank's part is a contiguous
// range of that local layout (comm/ShardRange.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>
#include <mpi.h>

#include <hybrid3d/comm/ShardRange.hpp>
#include <hybrid3d/layers/Parameter.hpp>

namespace hybrid3d::Impl {

// Elements of the owner's local layout: the tensor's, or rows x columns of a column shard.
Index localElements(const std::vector<Index>& shape, const ParameterLayout& layout);

// A copy of `space` (a dataset's) with its row-major elements `r` selected, in as few blocks
// as its shape allows (the caller closes it).
hid_t selectRange(hid_t space, const ShardRange& r);

// The checksum's share of the tensor's row-major elements `r`, whose stored values
// (`valueBytes` bytes each) start at `values`: the sum modulo 2^64, over the elements, of
// splitmix64(splitmix64(index) XOR the element's bytes). Summed over ranks whose ranges cover
// the tensor once, it is the tensor's checksum whatever the layout or sharding that wrote or
// reads it.
std::uint64_t checksumShare(const void* values, std::size_t valueBytes, const ShardRange& r);

// The part of its local elements this rank writes when every rank holding a copy of them holds
// them whole: the copies (the world for a replicated parameter; the ranks holding the same
// columns of a column shard, one per data-parallel group) split them as a sharded state is
// split (shardRange over the copies, in world-rank order). Collective over `world`. A column
// shard's copies that disagree on their columns are an error (thrown on every rank).
ShardRange writtenByCopies(MPI_Comm world, const std::vector<Index>& shape,
                           const ParameterLayout& layout);

}  // namespace hybrid3d::Impl
