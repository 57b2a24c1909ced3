#include "envs/box2d/lunar_lander.h"

#include <box2d/box2d.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ferry::envs::box2d {

namespace {

constexpr double kFps = 50;
constexpr double kScale = 30;  // Pixels per metre.
constexpr double kMainEnginePower = 13;
constexpr double kSideEnginePower = 0.6;
constexpr double kInitialRandomForce = 1000;
// The lander's hull in pixels, and its legs.
constexpr std::array<std::array<double, 2>, 6> kLanderPolygon = {
    {{-14, +17}, {-17, 0}, {-17, -10}, {+17, -10}, {+17, 0}, {+14, +17}}};
constexpr double kLegAway = 20;
constexpr double kLegDown = 18;
constexpr double kLegHalfWidth = 2;
constexpr double kLegHalfHeight = 8;
constexpr double kLegSpringTorque = 40;
constexpr double kSideEngineHeight = 14;
// Gym places the side engines' impulse 17 px along the lander's axis, not
// kSideEngineHeight, which makes their torque depend on the angle.
constexpr double kSideEngineOffset = 17;
constexpr double kSideEngineAway = 12;
constexpr double kMainEngineDown = 4;
constexpr double kViewportWidth = 600;
constexpr double kViewportHeight = 400;
constexpr double kWidth = kViewportWidth / kScale;    // Metres.
constexpr double kHeight = kViewportHeight / kScale;  // Metres.
constexpr double kHelipadY = kHeight / 4;
constexpr int kChunks = 11;
constexpr float kGravity = -10.f;
constexpr int kVelocityIterations = 6 * 30;
constexpr int kPositionIterations = 2 * 30;
// Collision filtering: the lander and its legs touch the ground only.
constexpr uint16 kGroundCategory = 0x0001;
constexpr uint16 kLanderCategory = 0x0010;
constexpr uint16 kLegCategory = 0x0020;

b2Vec2 Vec(double x, double y) { return b2Vec2(static_cast<float>(x), static_cast<float>(y)); }

Space ObservationSpace() {
  constexpr float kMax = std::numeric_limits<float>::max();
  return Space::Box({8}, {-1.5f, -1.5f, -kMax, -kMax, -kMax, -kMax, 0.f, 0.f},
                    {1.5f, kMax, kMax, kMax, kMax, kMax, 1.f, 1.f});
}

Space ActionSpace(bool continuous) {
  return continuous ? Space::Box({2}, {-1.f, -1.f}, {1.f, 1.f}) : Space::Discrete(4);
}

// A continuous action element clamped into [-1, 1], NaN as 0.
double Clamped(float x) { return std::isnan(x) ? 0.0 : std::clamp<double>(x, -1.0, 1.0); }

}  // namespace

// The terrain, the lander and its legs in one Box2D world, and what touched
// what. Its own contact listener, so callbacks arrive during world.Step.
class LunarLanderEnv::Scene final : public b2ContactListener {
 public:
  // Builds the terrain from 12 chunk heights drawn uniformly from [0, H/2]
  // and pushes the lander with `force`.
  Scene(const std::array<double, kChunks + 1>& heights, b2Vec2 force);
  Scene(const Scene&) = delete;
  Scene& operator=(const Scene&) = delete;

  b2Body& lander() { return *lander_; }
  bool lander_touched_ground() const { return lander_touched_ground_; }
  void Step() {
    world_.Step(static_cast<float>(1 / kFps), kVelocityIterations, kPositionIterations);
  }

  // The observation, in double precision for the reward.
  std::array<double, 8> State() const;

 private:
  void BeginContact(b2Contact* contact) override;
  void EndContact(b2Contact* contact) override;
  static bool Involves(const b2Contact& contact, const b2Body* body) {
    return contact.GetFixtureA()->GetBody() == body || contact.GetFixtureB()->GetBody() == body;
  }

  b2World world_{b2Vec2(0.f, kGravity)};
  b2Body* lander_ = nullptr;
  std::array<b2Body*, 2> legs_{};
  std::array<bool, 2> leg_contact_{};
  bool lander_touched_ground_ = false;
};

LunarLanderEnv::Scene::Scene(const std::array<double, kChunks + 1>& raw_heights, b2Vec2 force) {
  world_.SetContactListener(this);

  // Terrain: chunk heights, the five around the middle flattened into the
  // helipad, each averaged with its neighbours (Python's height[-1], the
  // extra 12th draw, is the first chunk's left neighbour).
  std::array<double, kChunks + 1> height = raw_heights;
  for (int i = kChunks / 2 - 2; i <= kChunks / 2 + 2; ++i) height[i] = kHelipadY;
  std::array<double, kChunks> smooth_y{};
  for (int i = 0; i < kChunks; ++i) {
    const double left = height[i == 0 ? kChunks : i - 1];
    smooth_y[i] = 0.33 * (left + height[i] + height[i + 1]);
  }
  b2BodyDef moon_def;
  b2Body* moon = world_.CreateBody(&moon_def);
  b2EdgeShape edge;
  edge.SetTwoSided(Vec(0, 0), Vec(kWidth, 0));
  b2FixtureDef floor;  // Box2D's defaults: friction 0.2, density 0.
  floor.shape = &edge;
  moon->CreateFixture(&floor);
  for (int i = 0; i + 1 < kChunks; ++i) {
    const double chunk_width = kWidth / (kChunks - 1);
    edge.SetTwoSided(Vec(chunk_width * i, smooth_y[i]),
                     Vec(chunk_width * (i + 1), smooth_y[i + 1]));
    b2FixtureDef surface;
    surface.shape = &edge;
    surface.density = 0.f;
    surface.friction = 0.1f;
    moon->CreateFixture(&surface);
  }

  const double initial_x = kWidth / 2;
  const double initial_y = kHeight;
  b2BodyDef lander_def;
  lander_def.type = b2_dynamicBody;
  lander_def.position = Vec(initial_x, initial_y);
  lander_ = world_.CreateBody(&lander_def);
  std::array<b2Vec2, kLanderPolygon.size()> vertices;
  for (size_t i = 0; i < vertices.size(); ++i) {
    vertices[i] = Vec(kLanderPolygon[i][0] / kScale, kLanderPolygon[i][1] / kScale);
  }
  b2PolygonShape hull;
  hull.Set(vertices.data(), static_cast<int32>(vertices.size()));
  b2FixtureDef hull_def;
  hull_def.shape = &hull;
  hull_def.density = 5.f;
  hull_def.friction = 0.1f;
  hull_def.restitution = 0.f;
  hull_def.filter.categoryBits = kLanderCategory;
  hull_def.filter.maskBits = kGroundCategory;
  lander_->CreateFixture(&hull_def);
  lander_->ApplyForceToCenter(force, /*wake=*/true);

  for (int leg = 0; leg < 2; ++leg) {
    const int i = leg == 0 ? -1 : +1;  // Gym's order: the leg on the right first.
    b2BodyDef leg_def;
    leg_def.type = b2_dynamicBody;
    leg_def.position = Vec(initial_x - i * kLegAway / kScale, initial_y);
    leg_def.angle = static_cast<float>(i * 0.05);
    legs_[leg] = world_.CreateBody(&leg_def);
    b2PolygonShape box;
    box.SetAsBox(static_cast<float>(kLegHalfWidth / kScale),
                 static_cast<float>(kLegHalfHeight / kScale));
    b2FixtureDef box_def;
    box_def.shape = &box;
    box_def.density = 1.f;
    box_def.restitution = 0.f;
    box_def.filter.categoryBits = kLegCategory;
    box_def.filter.maskBits = kGroundCategory;
    legs_[leg]->CreateFixture(&box_def);

    b2RevoluteJointDef joint;
    joint.bodyA = lander_;
    joint.bodyB = legs_[leg];
    joint.localAnchorA = Vec(0, 0);
    joint.localAnchorB = Vec(i * kLegAway / kScale, kLegDown / kScale);
    joint.enableMotor = true;
    joint.enableLimit = true;
    joint.maxMotorTorque = static_cast<float>(kLegSpringTorque);
    joint.motorSpeed = static_cast<float>(0.3 * i);
    // Gym's limits: each leg swings through 0.5 rad, ending 0.9 rad out.
    joint.lowerAngle = static_cast<float>(i == -1 ? 0.9 - 0.5 : -0.9);
    joint.upperAngle = static_cast<float>(i == -1 ? 0.9 : -0.9 + 0.5);
    world_.CreateJoint(&joint);
  }
}

std::array<double, 8> LunarLanderEnv::Scene::State() const {
  const b2Vec2& position = lander_->GetPosition();
  const b2Vec2& velocity = lander_->GetLinearVelocity();
  const double half_width = kWidth / 2;
  const double half_height = kHeight / 2;
  return {(position.x - half_width) / half_width,
          (position.y - (kHelipadY + kLegDown / kScale)) / half_height,
          velocity.x * half_width / kFps,
          velocity.y * half_height / kFps,
          lander_->GetAngle(),
          20.0 * lander_->GetAngularVelocity() / kFps,
          leg_contact_[0] ? 1.0 : 0.0,
          leg_contact_[1] ? 1.0 : 0.0};
}

void LunarLanderEnv::Scene::BeginContact(b2Contact* contact) {
  if (Involves(*contact, lander_)) lander_touched_ground_ = true;
  for (int leg = 0; leg < 2; ++leg) {
    if (Involves(*contact, legs_[leg])) leg_contact_[leg] = true;
  }
}

void LunarLanderEnv::Scene::EndContact(b2Contact* contact) {
  for (int leg = 0; leg < 2; ++leg) {
    if (Involves(*contact, legs_[leg])) leg_contact_[leg] = false;
  }
}

LunarLanderEnv::LunarLanderEnv(uint64_t seed, bool continuous)
    : TimeLimitedEnv(seed, ObservationSpace(), ActionSpace(continuous), kMaxEpisodeSteps),
      continuous_(continuous) {}

LunarLanderEnv::~LunarLanderEnv() = default;

void LunarLanderEnv::ResetState(std::mt19937_64& rng) {
  std::array<double, kChunks + 1> heights;
  for (double& h : heights) h = internal::UniformReal(rng, 0, kHeight / 2);
  const double force_x = internal::UniformReal(rng, -kInitialRandomForce, kInitialRandomForce);
  const double force_y = internal::UniformReal(rng, -kInitialRandomForce, kInitialRandomForce);
  dispersion_rng_.seed(rng());
  scene_ = std::make_unique<Scene>(heights, Vec(force_x, force_y));
  // Gym's reset takes one no-op step: its observation is the first one, and
  // its shaping the base of the first reward.
  Simulate(Throttle{});
}

LunarLanderEnv::Throttle LunarLanderEnv::Decode(const float* action) const {
  Throttle throttle;
  if (!continuous_) {
    const int index = internal::DiscreteActionIndex(action[0], 4);
    if (index == 2) throttle.main = 1;
    if (index == 1 || index == 3) {
      throttle.side = 1;
      throttle.side_direction = index - 2;
    }
    return throttle;
  }
  const double main = Clamped(action[0]);
  const double lateral = Clamped(action[1]);
  if (main > 0) throttle.main = (main + 1) * 0.5;
  if (std::abs(lateral) > 0.5) {
    throttle.side = std::abs(lateral);
    throttle.side_direction = lateral > 0 ? 1 : -1;
  }
  return throttle;
}

LunarLanderEnv::Outcome LunarLanderEnv::Advance(const float* action) {
  return Simulate(Decode(action));
}

LunarLanderEnv::Outcome LunarLanderEnv::Simulate(const Throttle& throttle) {
  b2Body& lander = scene_->lander();
  const double angle = lander.GetAngle();
  const double tip[2] = {std::sin(angle), std::cos(angle)};
  const double side[2] = {-tip[1], tip[0]};
  // Drawn on every step, engines firing or not, as Gym does.
  double dispersion[2];
  for (double& d : dispersion) d = internal::UniformReal(dispersion_rng_, -1, 1) / kScale;

  const b2Vec2 position = lander.GetPosition();
  if (throttle.main > 0) {
    const double along = kMainEngineDown / kScale + 2 * dispersion[0];
    const double ox = tip[0] * along + side[0] * dispersion[1];
    const double oy = -tip[1] * along - side[1] * dispersion[1];
    const double power = kMainEnginePower * throttle.main;
    lander.ApplyLinearImpulse(Vec(-ox * power, -oy * power), Vec(position.x + ox, position.y + oy),
                              /*wake=*/true);
  }
  if (throttle.side > 0) {
    const double across = 3 * dispersion[1] + throttle.side_direction * kSideEngineAway / kScale;
    const double ox = tip[0] * dispersion[0] + side[0] * across;
    const double oy = -tip[1] * dispersion[0] - side[1] * across;
    const double power = kSideEnginePower * throttle.side;
    lander.ApplyLinearImpulse(Vec(-ox * power, -oy * power),
                              Vec(position.x + ox - tip[0] * kSideEngineOffset / kScale,
                                  position.y + oy + tip[1] * kSideEngineHeight / kScale),
                              /*wake=*/true);
  }

  scene_->Step();

  const std::array<double, 8> s = scene_->State();
  const double shaping = -100 * std::sqrt(s[0] * s[0] + s[1] * s[1]) -
                         100 * std::sqrt(s[2] * s[2] + s[3] * s[3]) - 100 * std::abs(s[4]) +
                         10 * s[6] + 10 * s[7];
  double reward = shaping - previous_shaping_;
  previous_shaping_ = shaping;
  reward -= 0.3 * throttle.main + 0.03 * throttle.side;

  bool terminated = false;
  if (scene_->lander_touched_ground() || std::abs(s[0]) >= 1.0) {
    terminated = true;
    reward = -100;
  }
  if (!lander.IsAwake()) {
    terminated = true;
    reward = +100;
  }
  return {.reward = static_cast<float>(reward), .terminated = terminated};
}

void LunarLanderEnv::WriteObservation(float* obs) const {
  const std::array<double, 8> s = scene_->State();
  for (size_t i = 0; i < s.size(); ++i) obs[i] = static_cast<float>(s[i]);
}

}  // namespace ferry::envs::box2d
