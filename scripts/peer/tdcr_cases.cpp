// Load cases of the Continuum Robotics Lab's two-segment tendon-driven
// robot through their subsegment Cosserat rod model (guide disks; tendons
// straight between disks), the peer of rodlab's guided cable routing.
//
// Built against their public code (github.com/SvenLilge/tdcr-modeling,
// MIT, commit 379d34a) by scripts/peer/tdcr-peer.sh; prints one CSV row per
// case: the six tendon tensions [N], the tip force [N], and every disk's
// position [m] in their base frame (z along the backbone). With
// `--time ROUNDS`: each case's solve time instead, cold (their default
// initial guess) and warm (from the previous case's solution), best and
// mean of ROUNDS, for the speed comparison of docs/results.md.
#include "subsegmentcosseratrodmodel.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
    int rounds = (argc == 3 && std::strcmp(argv[1], "--time") == 0) ? std::atoi(argv[2]) : 0;
    // Their example robot (main.cpp): two 0.2 m segments of 10 disks,
    // tendons 10 mm from a 0.7 mm nitinol backbone (E 54 GPa), three per
    // segment at 90, -30 and 210 degrees.
    std::array<double, 2> length{0.2, 0.2};
    std::array<int, 2> disks{10, 10};
    std::array<double, 2> pitch{0.01, 0.01};
    std::vector<Eigen::Vector3d> routing;
    for (int s = 0; s < 2; s++) {
        for (double a : {M_PI / 2, -M_PI / 6, 7 * M_PI / 6}) {
            routing.push_back(Eigen::Vector3d(pitch[s] * std::cos(a), pitch[s] * std::sin(a), 0));
        }
    }
    SubsegmentCosseratRodModel model;
    model.setRobotParameters(length, 54e9, routing, disks, pitch, 0.7e-3);
    struct Case { double q[6]; double f[3]; };
    std::vector<Case> cases = {
        {{4, 0, 0, 0, 2, 0}, {0, 0, 0}},   // their main.cpp's example
        {{0, 3, 0, 0, 0, 0}, {0, 0, 0}},   // the first segment alone
        {{0, 0, 0, 0, 0, 3}, {0, 0, 0}},   // the second segment alone
        {{2, 0, 1, 0, 1.5, 0}, {0, 0.1, 0}},  // two tendons and a tip force
    };
    // Case c's tendon tensions and tip force.
    auto inputs = [&](size_t c) {
        Eigen::MatrixXd q(6, 1);
        for (int k = 0; k < 6; k++) q(k, 0) = cases[c].q[k];
        return std::make_pair(q, Eigen::Vector3d(cases[c].f[0], cases[c].f[1], cases[c].f[2]));
    };
    auto solve = [&](size_t c, Eigen::MatrixXd& frames) {
        auto [q, f] = inputs(c);
        return model.forwardKinematics(frames, q, f, Eigen::Vector3d::Zero());
    };
    if (rounds > 0) {
        std::printf("start,case,best_s,mean_s\n");
        for (int warm = 0; warm < 2; warm++) {
            model.setKeepInits(warm == 1);
            for (size_t c = 0; c < cases.size(); c++) {
                double best = 1e30, total = 0;
                for (int r = 0; r < rounds; r++) {
                    Eigen::MatrixXd frames;
                    if (warm && !solve((c + cases.size() - 1) % cases.size(), frames)) return 1;
                    auto t0 = std::chrono::steady_clock::now();
                    if (!solve(c, frames)) return 1;
                    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    best = std::min(best, dt);
                    total += dt;
                }
                std::printf("%s,%zu,%.6f,%.6f\n", warm ? "warm" : "cold", c, best, total / rounds);
            }
        }
        return 0;
    }
    std::printf("case,q1_n,q2_n,q3_n,q4_n,q5_n,q6_n,fx_n,fy_n,fz_n,disk,x_m,y_m,z_m,residual\n");
    for (size_t c = 0; c < cases.size(); c++) {
        Eigen::MatrixXd frames;
        bool ok = solve(c, frames);
        auto [q, f] = inputs(c);
        if (!ok) {
            std::fprintf(stderr, "case %zu: not converged (residual %g)\n", c, model.getFinalResudial());
            return 1;
        }
        for (int d = 0; d < frames.cols() / 4; d++) {
            Eigen::Vector3d p = frames.block(0, 4 * d + 3, 3, 1);
            std::printf("%zu,%g,%g,%g,%g,%g,%g,%g,%g,%g,%d,%.9f,%.9f,%.9f,%.3g\n", c, q(0), q(1), q(2), q(3), q(4), q(5), f(0), f(1), f(2), d,
                        p(0), p(1), p(2), model.getFinalResudial());
        }
    }
    return 0;
}
