"""Hugging Face diffusers: tiny UNet2DConditionModel, AutoencoderKL and DiT models built from
configs (no download), trained a few steps on the denoising loss, then sampled with DDIM and
DPM-Solver++ loops; a save_pretrained/from_pretrained round trip.

Runs on PyTorch and on ember (`ember run`) unchanged.
"""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import diffusers  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from diffusers import (  # noqa: E402
    AutoencoderKL,
    DDIMScheduler,
    DDPMScheduler,
    DiTTransformer2DModel,
    DPMSolverMultistepScheduler,
    UNet2DConditionModel,
)

diffusers.utils.logging.set_verbosity_error()


def train_denoiser(name, model, call, x0, steps=4, lr=1e-3):
    sched = DDPMScheduler(num_train_timesteps=100)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        noise = torch.randn_like(x0)
        t = torch.randint(0, 100, (x0.shape[0],))
        noisy = sched.add_noise(x0, noise, t)
        loss = F.mse_loss(call(model, noisy, t), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    print(f"{name:5s} params {sum(p.numel() for p in model.parameters())} losses {losses}")


def sample(name, model, call, shape, scheduler, steps=5):
    scheduler.set_timesteps(steps)
    x = torch.randn(shape) * scheduler.init_noise_sigma
    with torch.no_grad():
        for t in scheduler.timesteps:
            eps = call(model, scheduler.scale_model_input(x, t), t.expand(shape[0]))
            x = scheduler.step(eps, t, x).prev_sample
    print(f"{name:5s} {type(scheduler).__name__}: {steps} steps, sample mean {x.mean().item():.4f} "
          f"std {x.std().item():.4f}")


def main():
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
        attention_head_dim=8, norm_num_groups=8)
    text = torch.randn(2, 3, 16)

    def unet_call(m, x, t):
        return m(x, t, encoder_hidden_states=text).sample

    latents = torch.randn(2, 4, 8, 8)
    train_denoiser("unet", unet, unet_call, latents)
    sample("unet", unet, unet_call, (2, 4, 8, 8), DDIMScheduler(num_train_timesteps=100))
    sample("unet", unet, unet_call, (2, 4, 8, 8),
           DPMSolverMultistepScheduler(num_train_timesteps=100))

    torch.manual_seed(0)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
                        block_out_channels=(16, 32), layers_per_block=1, norm_num_groups=8,
                        sample_size=16)
    images = torch.rand(2, 3, 16, 16) * 2 - 1
    opt = torch.optim.AdamW(vae.parameters(), lr=1e-3)
    losses = []
    for _ in range(4):
        posterior = vae.encode(images).latent_dist
        recon = vae.decode(posterior.sample()).sample
        loss = F.mse_loss(recon, images) + 1e-4 * posterior.kl().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(round(loss.item(), 4))
    print(f"vae   params {sum(p.numel() for p in vae.parameters())} latents "
          f"{tuple(posterior.mean.shape)} losses {losses}")

    torch.manual_seed(0)
    dit = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                out_channels=4, num_layers=2, sample_size=8, patch_size=2,
                                num_embeds_ada_norm=10, norm_num_groups=8)
    labels = torch.tensor([1, 3])

    def dit_call(m, x, t):
        return m(x, timestep=t, class_labels=labels).sample

    train_denoiser("dit", dit, dit_call, latents)
    sample("dit", dit, dit_call, (2, 4, 8, 8), DDIMScheduler(num_train_timesteps=100))

    with tempfile.TemporaryDirectory() as d:
        unet.save_pretrained(d)
        again = UNet2DConditionModel.from_pretrained(d)
        files = sorted(os.listdir(d))
    with torch.no_grad():
        diff = (unet_call(unet, latents, torch.tensor([5, 5])) -
                unet_call(again, latents, torch.tensor([5, 5]))).abs().max().item()
    print(f"unet  save/load {files}: max |diff| {diff:.2e}")
    print(f"diffusers {diffusers.__version__}: done")


if __name__ == "__main__":
    main()
