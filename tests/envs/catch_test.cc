// bsuite's Catch against its published rules, by hand: where Reset puts the
// ball and the paddle, how each action moves the paddle, the ball's fall, and
// the reward when it reaches the bottom row.
#include "envs/bsuite/catch.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace ferry::envs::bsuite {
namespace {

constexpr int kRows = CatchEnv::kRows;
constexpr int kColumns = CatchEnv::kColumns;
using Board = std::array<float, kRows * kColumns>;

struct Cell {
  int row;
  int column;
  bool operator==(const Cell&) const = default;
};

// The lit cells of a board, row-major.
std::vector<Cell> LitCells(const Board& board) {
  std::vector<Cell> cells;
  for (int i = 0; i < kRows * kColumns; ++i) {
    REQUIRE((board[i] == 0.f || board[i] == 1.f));
    if (board[i] == 1.f) cells.push_back({i / kColumns, i % kColumns});
  }
  return cells;
}

Board Reset(Env& env) {
  Board board;
  board.fill(-1.f);
  env.Reset(board.data());
  return board;
}

StepResult Step(Env& env, float action, Board& board) {
  board.fill(-1.f);
  return env.Step(&action, board.data());
}

TEST_CASE("spaces: a 10 x 5 binary image, three actions, no time limit") {
  const CatchEnv env(/*seed=*/0);
  CHECK(env.observation_space().ToString() == "Box(shape=[10, 5], low=0, high=1)");
  CHECK(env.action_space().ToString() == "Discrete(3)");
  CHECK(env.max_episode_steps() == 0);
}

TEST_CASE("reset: the ball in a uniformly random column of the top row, the paddle mid-bottom") {
  CatchEnv env(/*seed=*/11);
  std::array<int, kColumns> count{};
  constexpr int kResets = 1000;
  for (int i = 0; i < kResets; ++i) {
    const std::vector<Cell> lit = LitCells(Reset(env));
    REQUIRE(lit.size() == 2);
    CHECK(lit[0].row == 0);
    CHECK(lit[1] == Cell{kRows - 1, kColumns / 2});
    ++count[lit[0].column];
  }
  // 200 expected per column; 5 standard deviations is 63.
  for (int c : count) CHECK(std::abs(c - kResets / kColumns) < 63);
}

TEST_CASE("each step moves the paddle by action - 1 within the board, then drops the ball a row") {
  CatchEnv env(/*seed=*/3);
  Board board = Reset(env);
  const int ball_column = LitCells(board)[0].column;
  // Left twice from the middle reaches the wall, a third left stays there,
  // then right and stay.
  const float actions[] = {0, 0, 0, 2, 1, 2, 2, 2};
  const int paddle[] = {1, 0, 0, 1, 1, 2, 3, 4};
  for (int step = 0; step < 8; ++step) {
    CAPTURE(step);
    const StepResult result = Step(env, actions[step], board);
    CHECK(result.reward == 0.f);
    CHECK_FALSE(result.terminated);
    CHECK_FALSE(result.truncated);
    CHECK(LitCells(board) == std::vector<Cell>{{step + 1, ball_column}, {kRows - 1, paddle[step]}});
  }
  CHECK(Step(env, 2.f, board).terminated);
}

// Plays one episode steering towards (or away from) the ball's column and
// returns the last step's result and board.
StepResult PlayEpisode(Env& env, bool chase, Board& board) {
  board = Reset(env);
  const int ball_column = LitCells(board)[0].column;
  int paddle_column = kColumns / 2;
  for (int step = 1; step < kRows - 1; ++step) {
    int move = ball_column > paddle_column ? 1 : ball_column < paddle_column ? -1 : 0;
    if (!chase) move = ball_column >= paddle_column ? -1 : 1;
    paddle_column = std::clamp(paddle_column + move, 0, kColumns - 1);
    const StepResult result = Step(env, static_cast<float>(move + 1), board);
    REQUIRE_FALSE(result.terminated);
    REQUIRE(result.reward == 0.f);
  }
  return Step(env, 1.f, board);
}

TEST_CASE("the ninth step ends the episode: +1 if the paddle is under the ball, -1 if not") {
  CatchEnv env(/*seed=*/5);
  Board board;
  for (int episode = 0; episode < 20; ++episode) {
    CAPTURE(episode);
    const StepResult caught = PlayEpisode(env, /*chase=*/true, board);
    CHECK(caught.terminated);
    CHECK_FALSE(caught.truncated);
    CHECK(caught.reward == 1.f);
    // Ball and paddle share the cell.
    CHECK(LitCells(board).size() == 1);
    CHECK(LitCells(board)[0].row == kRows - 1);

    const StepResult missed = PlayEpisode(env, /*chase=*/false, board);
    CHECK(missed.terminated);
    CHECK(missed.reward == -1.f);
    const std::vector<Cell> lit = LitCells(board);
    REQUIRE(lit.size() == 2);
    CHECK(lit[0].row == kRows - 1);
    CHECK(lit[1].row == kRows - 1);
  }
}

}  // namespace
}  // namespace ferry::envs::bsuite
